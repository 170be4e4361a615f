import { type MemoryWindow, type ToolResultBlock, TurnId } from '@portal/domain';
import type { ChatMessage } from './chat.types';
import { resolveLimits } from './limits';
import {
  compactionTail,
  conversationEntries,
  hiddenCallsNote,
  memoryEntries,
  mergeAdjacent,
  outcomeOnly,
  previewResult,
  replayArguments,
  replayResult,
  replayedTurns,
  shownCalls,
  summaryEntry,
  summaryNote,
  wholeResult,
  type Entry,
} from './memory';
import { renderEntries, type PromptModel } from './prompt-stack';
import {
  assistant,
  chat,
  compactionBlock,
  documentAttachment,
  limits,
  messages,
  narration,
  result,
  steer,
  text,
  thinking,
  turn,
  use,
  user,
} from './testing/transcript.fixtures';

const model: PromptModel = { contextWindow: 128_000, vision: null, reasoning: false };
const report = documentAttachment('att_report', {
  filename: 'report.pdf',
  pagesRead: 40,
  pageCount: 40,
  chars: 90_000,
  headings: ['Summary', 'Q3 results'],
});
const attachments = { att_report: report };
const replay = (window: MemoryWindow, l = limits): ChatMessage[] =>
  renderEntries(memoryEntries(window, l), attachments, model, l);
const current = (window: MemoryWindow, newText: string, turnSoFar: ReturnType<typeof messages>, l = limits) =>
  renderEntries(
    conversationEntries(window, { text: newText, attachmentIds: [] }, turnSoFar, l),
    attachments,
    model,
    l,
  );

const block = (over: Partial<ToolResultBlock>): ToolResultBlock => ({
  id: 'b',
  seq: 1,
  kind: 'tool_result',
  callId: 'c1',
  outcome: 'ok',
  content: 'x',
  ref: null,
  ...over,
});

describe('the worked example of SPEC section 4', () => {
  const longResult = 'Revenue by quarter. '.repeat(45); // 900 characters
  const turn7 = turn(7, [
    user('Find the Q3 revenue in the report.', ['att_report']),
    assistant(
      thinking('The user wants Q3.'),
      narration('Let me look.'),
      use('c1', 'search_attachments', '{"query":"Q3 revenue"}'),
      result('c1', longResult, { ref: 'tr_8f2c' }),
      text('Q3 revenue was $4.2M (page 12).'),
    ),
  ]);
  const manifest = [
    '[Attachment att_report: report.pdf (application/pdf, document)]',
    'Reading progress: 40/40 pages read (finished)',
    'Headings:',
    '- Summary',
    '- Q3 results',
    'Text too long to include (90000 characters): read it with read_document or search it with search_attachments.',
  ].join('\n');
  const call = {
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: 'c1',
        type: 'function',
        function: { name: 'search_attachments', arguments: '{"query":"Q3 revenue"}' },
      },
    ],
  };

  it('replays at d = 2 with the result cut to 400 characters and its reference', () => {
    const seen = replay({ summary: null, turns: [turn7, chat(8, 'Thanks.', 'You are welcome.')] });
    expect(seen.slice(0, 4)).toEqual([
      { role: 'user', content: `Find the Q3 revenue in the report.\n\n${manifest}` },
      call,
      {
        role: 'tool',
        tool_call_id: 'c1',
        content: `${longResult.slice(0, 400)} … [cut; whole result: ref:tr_8f2c]`,
      },
      { role: 'assistant', content: 'Q3 revenue was $4.2M (page 12).' },
    ]);
  });

  it('replays at d = 5 with the outcome only', () => {
    const later = [8, 9, 10, 11].map((n) => chat(n, `Question ${n}`, `Answer ${n}`));
    const seen = replay({ summary: null, turns: [turn7, ...later] });
    expect(seen.slice(0, 4)).toEqual([
      { role: 'user', content: `Find the Q3 revenue in the report.\n\n${manifest}` },
      call,
      { role: 'tool', tool_call_id: 'c1', content: '[result not replayed; outcome: ok]' },
      { role: 'assistant', content: 'Q3 revenue was $4.2M (page 12).' },
    ]);
  });

  it('never shows the narration or the thinking at any distance', () => {
    for (let d = 1; d <= 6; d++) {
      const later = Array.from({ length: d - 1 }, (_, i) => chat(8 + i, 'q', 'a'));
      const seen = JSON.stringify(replay({ summary: null, turns: [turn7, ...later] }));
      expect(seen).not.toContain('Let me look.');
      expect(seen).not.toContain('The user wants Q3.');
    }
  });
});

describe('summary entry', () => {
  const summary = {
    id: 's',
    seq: 1,
    ...compactionBlock(17, 'Summary of turns 1–17\nFacts: revenue $4.2M (ref:tr_1).'),
  };

  it('is headed by its note and keeps the references', () => {
    expect(summaryNote(summary)).toBe('[Summary of earlier conversation — turns 1–17]');
    expect(summaryEntry(summary)).toEqual({
      role: 'user',
      layer: 'memory',
      segments: [
        {
          text: '[Summary of earlier conversation — turns 1–17]\n\nSummary of turns 1–17\nFacts: revenue $4.2M (ref:tr_1).',
          attachmentIds: [],
          fresh: false,
        },
      ],
    });
  });

  it('comes first, merged with the first replayed user text, then the turns after it', () => {
    const seen = replay({ summary: { turnN: 17, block: summary }, turns: [chat(18, 'Next?', 'Done.')] });
    expect(seen).toEqual([
      {
        role: 'user',
        content:
          '[Summary of earlier conversation — turns 1–17]\n\nSummary of turns 1–17\nFacts: revenue $4.2M (ref:tr_1).\n\nNext?',
      },
      { role: 'assistant', content: 'Done.' },
    ]);
  });

  it('replays only what follows the compaction block when the window holds the turn that compacted', () => {
    const t17 = turn(17, [
      user('Long task'),
      assistant(
        use('c1', 'x', '{}'),
        result('c1', 'before'),
        { ...compactionBlock(17) },
        use('c2', 'y', '{}'),
      ),
      assistant(result('c2', 'after'), text('Finished.')),
    ]);
    expect(replay({ summary: { turnN: 17, block: summary }, turns: [t17] }).slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c2', type: 'function', function: { name: 'y', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c2', content: 'after' },
      { role: 'assistant', content: 'Finished.' },
    ]);
  });
});

describe('replayedTurns', () => {
  const turns = Array.from({ length: 25 }, (_, i) => chat(i + 1, `q${i + 1}`, `a${i + 1}`));

  it.each([
    [25, 20, 6],
    [5, 20, 1],
    [25, 3, 23],
  ])(
    'of %i turns with TURNS_REPLAYED %i keeps the last ones, oldest first from turn %i',
    (count, max, first) => {
      const kept = replayedTurns(turns.slice(0, count), resolveLimits({ TURNS_REPLAYED: max }));
      expect(kept.map((t) => t.turn.n)).toEqual(
        Array.from({ length: Math.min(count, max) }, (_, i) => first + i),
      );
    },
  );

  it('leaves out compaction turns, their /compact and their "Context summarised" line', () => {
    const manual = turn(
      3,
      [
        user('/compact keep figures'),
        assistant({ ...compactionBlock(2) }, text('Context summarised: turns 1–2.')),
      ],
      { kind: 'compaction' },
    );
    const seen = JSON.stringify(
      replay({ summary: null, turns: [chat(2, 'a', 'b'), manual, chat(4, 'c', 'd')] }),
    );
    expect(seen).not.toContain('Context summarised');
    expect(seen).not.toContain('/compact');
  });
});

describe('calls per turn', () => {
  it.each([
    [3, 8, [1, 2, 3], 0],
    [8, 8, [1, 2, 3, 4, 5, 6, 7, 8], 0],
    [11, 8, [4, 5, 6, 7, 8, 9, 10, 11], 3],
  ])('of %i calls with CALLS_PER_TURN %i shows the last ones', (count, max, shown, hidden) => {
    const ids = Array.from({ length: count }, (_, i) => `c${i + 1}`);
    const got = shownCalls(ids, resolveLimits({ CALLS_PER_TURN: max }));
    expect([...got.shown]).toEqual(shown.map((n) => `c${n}`));
    expect(got.hidden).toBe(hidden);
  });

  it('says in the first shown assistant entry how many earlier calls are not shown', () => {
    const steps = Array.from({ length: 10 }, (_, i) => [
      use(`c${i + 1}`, 'fetch', `{"i":${i + 1}}`),
      result(`c${i + 1}`, `r${i + 1}`),
    ]);
    const seen = replay({
      summary: null,
      turns: [turn(1, [user('Go'), assistant(...steps.flat(), text('Done.'))])],
    });
    expect(hiddenCallsNote(2)).toBe('[2 earlier tool calls of this turn not shown]');
    expect(seen[1]).toEqual({
      role: 'assistant',
      content: '[2 earlier tool calls of this turn not shown]',
      tool_calls: [{ id: 'c3', type: 'function', function: { name: 'fetch', arguments: '{"i":3}' } }],
    });
    expect(
      seen.filter((m) => m.role === 'tool').map((m) => (m as { tool_call_id: string }).tool_call_id),
    ).toEqual(['c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'c10']);
  });
});

describe('results', () => {
  const short = block({ content: 'fits' });
  const long = block({ content: 'y'.repeat(500), ref: 'tr_1' });

  it.each<[string, ToolResultBlock | undefined, number, string]>([
    ['a result that fits crosses whole with no reference', short, 1, 'fits'],
    [
      'a long result is cut with its reference',
      long,
      3,
      `${'y'.repeat(400)} … [cut; whole result: ref:tr_1]`,
    ],
    [
      'a long result without a stored copy says so',
      block({ content: 'y'.repeat(401) }),
      2,
      `${'y'.repeat(400)} … [cut; the whole result is not stored]`,
    ],
    [
      'an error keeps its failure message close by',
      block({ outcome: 'error', content: 'HTTP 500' }),
      1,
      '[outcome: error] HTTP 500',
    ],
    [
      'a denied call says so',
      block({ outcome: 'denied', content: 'Not now.' }),
      3,
      '[outcome: denied] Not now.',
    ],
    ['a call that never returned is answered', undefined, 2, '[no result; outcome: never returned]'],
    ['older turns keep the outcome only', long, 4, '[result not replayed; outcome: ok]'],
    [
      'older turns lose the failure message',
      block({ outcome: 'error', content: 'HTTP 500' }),
      9,
      '[result not replayed; outcome: error]',
    ],
    ['older denied', block({ outcome: 'denied' }), 5, '[result not replayed; outcome: denied]'],
    ['older never returned', undefined, 4, '[result not replayed; outcome: never returned]'],
  ])('%s', (_, r, d, expected) => {
    expect(replayResult(r, d, limits)).toBe(expected);
  });

  it('has one function per form', () => {
    expect(previewResult(short, limits)).toBe('fits');
    expect(outcomeOnly('never returned')).toBe('[result not replayed; outcome: never returned]');
    expect(wholeResult(long)).toBe('y'.repeat(500));
    expect(wholeResult(undefined)).toBe('[no result; outcome: never returned]');
  });
});

describe('replayArguments', () => {
  const long = 'z'.repeat(250);
  it.each<[string, string, number | null, unknown]>([
    ['valid, nothing to cut: exactly as sent', '{ "q": "short" }', 200, { q: 'short' }],
    [
      'long strings are cut inside the JSON',
      `{"q":"${long}","n":[1,"${long}"]}`,
      200,
      {
        q: `${'z'.repeat(200)}… [cut: 50 more characters]`,
        n: [1, `${'z'.repeat(200)}… [cut: 50 more characters]`],
      },
    ],
    [
      'nested objects too',
      `{"a":{"b":"${long}"}}`,
      200,
      { a: { b: `${'z'.repeat(200)}… [cut: 50 more characters]` } },
    ],
    [
      'malformed JSON becomes an object describing it',
      '{"q": "unterminated',
      200,
      {
        unparsed_arguments: '{"q": "unterminated',
        note: 'The arguments sent were not a valid JSON object.',
      },
    ],
    [
      'JSON that is not an object too',
      '[1,2]',
      200,
      { unparsed_arguments: '[1,2]', note: 'The arguments sent were not a valid JSON object.' },
    ],
    ['empty arguments are an empty object', '', 200, {}],
    ['the current turn does not cut', `{"q":"${long}"}`, null, { q: long }],
  ])('%s', (_, raw, max, expected) => {
    const out = replayArguments(raw, max);
    expect(JSON.parse(out)).toEqual(expected);
  });

  it('keeps the text as sent when nothing is cut', () => {
    expect(replayArguments('{ "q": "short" }', 200)).toBe('{ "q": "short" }');
  });

  it('cuts the malformed text of a past call too', () => {
    const out = JSON.parse(replayArguments(`{"q":"${long}`, 200)) as { unparsed_arguments: string };
    expect(out.unparsed_arguments).toMatch(/… \[cut: 56 more characters\]$/);
  });
});

describe('past turns', () => {
  it('replays a cut-off turn: what it wrote and the calls it ran, each answered', () => {
    const t = turn(
      1,
      [
        user('Do it'),
        assistant(narration('Working.'), use('c1', 'a', '{}'), use('c2', 'b', '{}'), result('c1', 'one')),
      ],
      { status: 'cut_off' },
    );
    expect(replay({ summary: null, turns: [t] })).toEqual([
      { role: 'user', content: 'Do it' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'b', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: '[no result; outcome: never returned]' },
    ]);
  });

  it('replays steering where it arrived and the answer text it interrupted', () => {
    const t = turn(1, [
      user('/market-research Compare A and B'),
      assistant(use('c1', 'a', '{}'), result('c1', 'one'), text('A is')),
      steer('Only prices, please'),
      assistant(
        narration('Checking prices.'),
        use('c2', 'b', '{}'),
        result('c2', 'two'),
        text('A costs less.'),
      ),
    ]);
    expect(replay({ summary: null, turns: [t] })).toEqual([
      { role: 'user', content: 'Compare A and B' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'assistant', content: 'A is' },
      { role: 'user', content: 'Only prices, please' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c2', type: 'function', function: { name: 'b', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
      { role: 'assistant', content: 'A costs less.' },
    ]);
  });

  it('merges a turn with no answer into the next user text', () => {
    const failed = turn(1, [user('First')], { status: 'failed' });
    expect(replay({ summary: null, turns: [failed, chat(2, 'Second', 'Answer')] })).toEqual([
      { role: 'user', content: 'First\n\nSecond' },
      { role: 'assistant', content: 'Answer' },
    ]);
  });
});

describe('mergeAdjacent', () => {
  const u = (t: string): Entry => ({
    role: 'user',
    segments: [{ text: t, attachmentIds: [], fresh: false }],
    layer: 'memory',
  });
  const a = (t: string, calls: string[] = []): Entry => ({
    role: 'assistant',
    text: t,
    calls: calls.map((id) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } })),
    layer: 'memory',
  });
  const tool = (id: string): Entry => ({ role: 'tool', callId: id, content: 'r', layer: 'memory' });

  it.each<[string, Entry[], Entry[]]>([
    [
      'user after user',
      [u('a'), u('b')],
      [
        {
          role: 'user',
          segments: [
            { text: 'a', attachmentIds: [], fresh: false },
            { text: 'b', attachmentIds: [], fresh: false },
          ],
          layer: 'memory',
        },
      ],
    ],
    ['assistant prose after assistant prose', [a('x'), a('y')], [a('x\n\ny')]],
    [
      'prose into the following calls entry',
      [a('x'), a('', ['c1']), tool('c1')],
      [a('x', ['c1']), tool('c1')],
    ],
    [
      'never into a tool entry',
      [a('', ['c1']), tool('c1'), a('done')],
      [a('', ['c1']), tool('c1'), a('done')],
    ],
    ['never into an entry holding calls', [a('', ['c1']), a('late')], [a('', ['c1']), a('late')]],
  ])('%s', (_, input, expected) => {
    expect(mergeAdjacent(input)).toEqual(expected);
  });
});

describe('the current turn', () => {
  const window: MemoryWindow = { summary: null, turns: [] };

  it('follows the new message with its calls and results whole, steering where it arrived, no narration', () => {
    const long = 'w'.repeat(1000);
    const longArg = 'q'.repeat(300);
    const so = messages(TurnId('t9'), [
      assistant(
        thinking('hmm'),
        narration('Looking it up.'),
        use('c1', 'search_attachments', `{"query":"${longArg}"}`),
      ),
      assistant(result('c1', long, { ref: 'tr_9' })),
      assistant(text('The answer is')),
      steer('Also check B'),
      assistant(use('c2', 'fetch', '{bad json'), result('c2', 'HTTP 404', { outcome: 'error' })),
    ]);
    expect(current(window, '/fact-check /market-research What is A?', so)).toEqual([
      { role: 'user', content: 'What is A?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'search_attachments', arguments: `{"query":"${longArg}"}` },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: long },
      { role: 'assistant', content: 'The answer is' },
      { role: 'user', content: 'Also check B' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'c2',
            type: 'function',
            function: {
              name: 'fetch',
              arguments: JSON.stringify({
                unparsed_arguments: '{bad json',
                note: 'The arguments sent were not a valid JSON object.',
              }),
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'c2', content: '[outcome: error] HTTP 404' },
    ]);
  });

  it('shows every call of the current turn, not only the last eight', () => {
    const steps = Array.from({ length: 12 }, (_, i) =>
      assistant(use(`c${i}`, 'f', '{}'), result(`c${i}`, 'r')),
    );
    const got = current(window, 'Go', messages(TurnId('t1'), steps));
    expect(got.filter((m) => m.role === 'tool')).toHaveLength(12);
  });

  it('goes on from the summary and the tail after a compaction inside the turn', () => {
    const so = messages(TurnId('t9'), [
      assistant(use('c1', 'f', '{}'), result('c1', 'r1')),
      assistant(use('c2', 'f', '{}'), use('c3', 'f', '{}'), result('c2', 'r2'), result('c3', 'r3')),
      assistant({ ...compactionBlock(9, 'Summary of turns 1–9') }, use('c4', 'f', '{}'), result('c4', 'r4')),
    ]);
    const got = current(
      { summary: null, turns: [chat(8, 'Earlier', 'Sure')] },
      'Go',
      so,
      resolveLimits({ TAIL_MESSAGES: 2 }),
    );
    const f = (id: string) => ({ id, type: 'function', function: { name: 'f', arguments: '{}' } });
    // The last two messages are the c3 result and the c2 one; the tail moves back to their calls.
    expect(got).toEqual([
      { role: 'user', content: '[Summary of earlier conversation — turns 1–9]\n\nSummary of turns 1–9' },
      { role: 'assistant', content: null, tool_calls: [f('c2'), f('c3')] },
      { role: 'tool', tool_call_id: 'c2', content: 'r2' },
      { role: 'tool', tool_call_id: 'c3', content: 'r3' },
      { role: 'assistant', content: null, tool_calls: [f('c4')] },
      { role: 'tool', tool_call_id: 'c4', content: 'r4' },
    ]);
  });

  it('takes the tail from the turn alone: past turns are in the summary', () => {
    const so = messages(TurnId('t9'), [
      assistant({ ...compactionBlock(9, 'Summary of turns 1–9') }, text('Done.')),
    ]);
    const got = current({ summary: null, turns: [chat(8, 'Earlier', 'Sure')] }, '/fact-check Go', so);
    expect(got).toEqual([
      {
        role: 'user',
        content: '[Summary of earlier conversation — turns 1–9]\n\nSummary of turns 1–9\n\nGo',
      },
      { role: 'assistant', content: 'Done.' },
    ]);
  });

  it('keeps the tail as is when it does not open on a tool result', () => {
    const e = (role: 'user' | 'assistant', t: string): Entry =>
      role === 'user'
        ? { role, segments: [{ text: t, attachmentIds: [], fresh: false }], layer: 'memory' }
        : { role, text: t, calls: [], layer: 'memory' };
    const list = [e('user', '1'), e('assistant', '2'), e('user', '3'), e('assistant', '4'), e('user', '5')];
    expect(compactionTail(list, limits)).toEqual(list.slice(1));
  });
});
