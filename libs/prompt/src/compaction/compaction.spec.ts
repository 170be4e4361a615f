import { type CompactionBlock, type MemoryWindow, TurnId } from '@portal/domain';
import {
  buildCompactionPrompt,
  coveredTurns,
  finishSummary,
  languageSample,
  leftOutRequests,
  personRequest,
  personRequests,
  quoteRequests,
  summaryForPeople,
  summaryHeading,
  summaryPromptBudget,
  summaryRequests,
  turnLineTokens,
  type CompactionPrompt,
  type CompactionPromptInput,
} from '.';
import { resolveLimits } from '../limits';
import { summaryNote } from '../memory';
import { projectTokens, textTokens, TokenCounter } from '../tokens';
import {
  assistant,
  chat,
  compactionBlock,
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
} from '../testing/transcript.fixtures';

const earlier: CompactionBlock = {
  id: 'c1',
  seq: 2,
  ...compactionBlock(
    3,
    'Summary of turns 1–3\n\n## Requests\n- Turn 1: "Find the Q3 revenue."\n\n## Facts\n- Q3 revenue was $4.2M (ref:tr_q3)',
  ),
  trigger: 'MANUAL',
};

function input(over: Partial<CompactionPromptInput> = {}): CompactionPromptInput {
  return {
    window: { summary: null, turns: [chat(1, 'Find the Q3 revenue in the report.', 'It was $4.2M.')] },
    current: { n: 2, messages: messages(TurnId('t2'), [user('Now compare it with Q2 please.')]) },
    trigger: 'AUTO',
    contextWindow: 128_000,
    limits,
    ...over,
  };
}

const systemOf = (p: CompactionPrompt) => p.messages[0].content as string;
const materialOf = (p: CompactionPrompt) => p.messages[1].content as string;

describe('buildCompactionPrompt: the turns it covers, always from turn 1', () => {
  const withSummary: MemoryWindow = {
    summary: { turnN: 4, block: earlier },
    turns: [chat(5, 'Next task: draft the memo.', 'Drafted.')],
  };
  it.each([
    ['AUTO in turn 2', input(), 2],
    [
      'AUTO in turn 6 after a summary of 1–3',
      input({ window: withSummary, current: { n: 6, messages: [] } }),
      6,
    ],
    [
      'MANUAL as turn 6 covers the turns before it',
      input({
        window: withSummary,
        trigger: 'MANUAL',
        current: { n: 6, messages: messages(TurnId('t6'), [user('/compact')]) },
      }),
      5,
    ],
  ])('%s', (_name, given, to) => {
    const prompt = buildCompactionPrompt(given);
    expect(prompt.coversTurns).toEqual({ from: 1, to });
    expect(prompt.heading).toBe(`Summary of turns 1–${to}`);
    expect(systemOf(prompt)).toContain(`Begin with exactly this line: Summary of turns 1–${to}`);
    expect(prompt.messages.at(-1)?.content).toContain(`"Summary of turns 1–${to}"`);
  });

  it('never lets a manual compaction of turn 1 cover turn 0', () => {
    expect(coveredTurns('MANUAL', 1)).toEqual({ from: 1, to: 1 });
    expect(coveredTurns('AUTO', 17)).toEqual({ from: 1, to: 17 });
    expect(summaryHeading(17)).toBe('Summary of turns 1–17');
  });

  it('offers the model no tools, asks for English headings and the untranslated items', () => {
    const prompt = buildCompactionPrompt(input());
    expect(prompt.tools).toEqual([]);
    const system = systemOf(prompt);
    for (const heading of ['## Requests', '## Decisions', '## Work done', '## Open work', '## Facts'])
      expect(system).toContain(heading);
    expect(system).toContain('Keep the section headings in English');
    expect(system).toContain(
      'Copy quotations, names, document codes, figures, paths, ids and references (ref:…) exactly as they are, untranslated',
    );
    expect(system).toContain('each followed by the ref:<id> of the tool result that found it');
    expect(system).toContain('No tool result references here');
  });
});

describe('buildCompactionPrompt: the history', () => {
  it('renders what the agent did and said, with every result reference, never thinking or narration', () => {
    const past = turn(1, [
      user('/market-research Find the Q3 revenue.'),
      assistant(thinking('THINK'), narration('NARRATE'), use('c1', 'search_attachments', '{"query":"Q3"}')),
      assistant(result('c1', 'Q3 revenue: $4.2M', { ref: 'tr_a' }), text('Q3 was $4.2M.')),
    ]);
    const long = 'x'.repeat(limits.RESULT_PREVIEW_CHARS + 50);
    const current = messages(TurnId('t2'), [
      user('Write it to /reports/q3.md'),
      assistant(use('c2', 'write_file', '{"path":"/reports/q3.md"}'), result('c2', long, { ref: 'tr_b' })),
      steer('and add Q2 too'),
    ]);
    const material = materialOf(
      buildCompactionPrompt(
        input({ window: { summary: null, turns: [past] }, current: { n: 2, messages: current } }),
      ),
    );
    expect(material).toContain('### Turn 1\nPerson: Find the Q3 revenue.');
    expect(material).toContain('Agent called search_attachments {"query":"Q3"} (call c1)');
    expect(material).toContain('Result of c1 (ref:tr_a): Q3 revenue: $4.2M');
    expect(material).toContain('Agent: Q3 was $4.2M.');
    expect(material).toContain('### Turn 2 (the current turn, so far)');
    expect(material).toContain(`Result of c2 (ref:tr_b): ${'x'.repeat(limits.RESULT_PREVIEW_CHARS)} … [cut]`);
    expect(material).toContain('Person (while the turn ran): and add Q2 too');
    expect(material).not.toMatch(/THINK|NARRATE/);
  });

  it('carries an earlier summary whole, named by the note it is replayed under', () => {
    const prompt = buildCompactionPrompt(
      input({
        window: { summary: { turnN: 4, block: earlier }, turns: [chat(5, 'Draft the memo now.', 'Done.')] },
        current: { n: 6, messages: [] },
      }),
    );
    expect(prompt.earlierSummary).toBe(earlier);
    expect(
      materialOf(prompt).startsWith(
        `${summaryNote(earlier)}\n\n${earlier.summary}\n\n## Conversation since the earlier summary`,
      ),
    ).toBe(true);
    expect(systemOf(prompt)).toContain(
      `The history opens with an earlier summary, under the note "[Summary of earlier conversation — turns 1–3]". Carry everything in it into the new summary`,
    );
    expect(prompt.requests.map((r) => r.text)).toEqual(['Draft the memo now.']);
  });

  it('lists every request from turn 1, the earlier summary’s included, instead of asking the model to carry them', () => {
    const turns = [chat(5, 'Draft the memo now.', 'Done.')];
    const people = [
      { turnN: 1, messageId: 'm1', text: 'Find the Q3 revenue.' },
      { turnN: 2, messageId: 'm2', text: 'Compare it with Q2.' },
      ...personRequests(turns),
    ];
    const prompt = buildCompactionPrompt(
      input({
        window: { summary: { turnN: 4, block: earlier }, turns },
        current: { n: 6, messages: [] },
        people,
      }),
    );
    expect(prompt.requests.map((r) => [r.turnN, r.text])).toEqual([
      [1, 'Find the Q3 revenue.'],
      [2, 'Compare it with Q2.'],
      [5, 'Draft the memo now.'],
    ]);
    // Still carried whole, but its requests come from the list.
    expect(materialOf(prompt).startsWith(`${summaryNote(earlier)}\n\n${earlier.summary}\n\n`)).toBe(true);
    const system = systemOf(prompt);
    expect(system).toContain(
      'Carry everything in it into the new summary: its decisions, work done, open work and facts, with their references. Its requests are listed again under "Requests to keep", with every later one: copy them from there.',
    );
    expect(system).toContain(
      'Every request of the person, oldest first: each request listed under "Requests to keep"',
    );
  });

  it('starts from a summary written earlier in the same turn and from what follows an AUTO summary in a past turn', () => {
    const inTurn: CompactionBlock = {
      id: 'c2',
      seq: 4,
      ...compactionBlock(7, 'Summary of turns 1–7 IN_TURN'),
    };
    const current = messages(TurnId('t7'), [
      user('OPENING request'),
      assistant(use('c1', 'search_attachments', '{}'), result('c1', 'r'), { ...inTurn }),
      steer('AFTER steering request'),
    ]);
    const prompt = buildCompactionPrompt(
      input({
        window: { summary: null, turns: [chat(6, 'PAST request', 'a')] },
        current: { n: 7, messages: current },
      }),
    );
    expect(prompt.earlierSummary?.summary).toBe('Summary of turns 1–7 IN_TURN');
    // Every request is listed, the current turn's before its summary too; the conversation shown
    // starts after that summary.
    expect(prompt.requests.map((r) => r.text)).toEqual([
      'PAST request',
      'OPENING request',
      'AFTER steering request',
    ]);
    expect(materialOf(prompt).split('## Requests to keep')[0]).not.toMatch(/PAST request|OPENING request/);

    const autoPast = turn(4, [
      user('BEFORE the summary'),
      assistant({ ...compactionBlock(4) }, text('answer after it')),
      steer('steered after the summary'),
    ]);
    const next = buildCompactionPrompt(
      input({
        window: {
          summary: { turnN: 4, block: { id: 'x', seq: 2, ...compactionBlock(4) } },
          turns: [autoPast],
        },
        current: { n: 5, messages: [] },
      }),
    );
    expect(next.requests.map((r) => r.text)).toEqual(['steered after the summary']);
    expect(materialOf(next)).toContain('Agent: answer after it');
    expect(materialOf(next)).not.toContain('BEFORE the summary');
  });

  it.each([
    ['MANUAL with instructions', 'MANUAL' as const, '/compact keep every figure', 'Keep it short.', true],
    ['MANUAL without instructions', 'MANUAL' as const, '/compact', 'Keep it short.', false],
    ['AUTO', 'AUTO' as const, 'Now compare it with Q2 please.', null, false],
  ])(
    '%s: manual instructions and the agent guidance are appended',
    (_name, trigger, opening, guidance, hasInstructions) => {
      const prompt = buildCompactionPrompt(
        input({ trigger, guidance, current: { n: 2, messages: messages(TurnId('t2'), [user(opening)]) } }),
      );
      const system = systemOf(prompt);
      expect(prompt.instructions).toBe(hasInstructions ? 'keep every figure' : null);
      if (hasInstructions)
        expect(system).toContain('Instructions from the person for this summary:\nkeep every figure');
      else expect(system).not.toContain('Instructions from the person');
      if (guidance)
        expect(system.endsWith(`Guidance from the agent's author for summaries:\n${guidance}`)).toBe(true);
      else expect(system).not.toContain('Guidance');
      // The /compact message is the command, never a request.
      expect(prompt.requests.map((r) => r.text)).toEqual(
        trigger === 'AUTO'
          ? ['Find the Q3 revenue in the report.', opening]
          : ['Find the Q3 revenue in the report.'],
      );
    },
  );
});

describe('requests verbatim, bounded to SUMMARY_REQUESTS_SHARE of the context window', () => {
  const counter = new TokenCounter();
  const req = (n: number, words: number) => ({
    turnN: n,
    messageId: `m${n}`,
    text: `Request ${n}: ` + Array.from({ length: words }, (_, i) => `word${i}`).join(' '),
  });

  it('keeps every request whole, oldest first, while they fit', () => {
    const requests = [req(1, 5), req(2, 5), req(3, 5)];
    const quoted = quoteRequests(requests, 128_000, limits, counter);
    expect(quoted.map((q) => [q.quoted, q.shortened])).toEqual(requests.map((r) => [r.text, false]));
  });

  it('shortens the oldest past the share, each with a reference to its message, and stays within it', () => {
    const requests = [1, 2, 3, 4, 5, 6].map((n) => req(n, 150));
    const each = Math.max(...requests.map((r) => counter.count(r.text)));
    // Room for two whole requests and a half.
    const contextWindow = Math.ceil((2.5 * each) / limits.SUMMARY_REQUESTS_SHARE);
    const quoted = quoteRequests(requests, contextWindow, limits, counter);
    const kept = quoted.filter((q) => !q.shortened);
    expect(kept.map((q) => q.turnN)).toEqual([5, 6]);
    for (const q of quoted.filter((x) => x.shortened)) {
      expect(q.quoted).toMatch(
        new RegExp(`\\[shortened; whole request: turn ${q.turnN}, message m${q.turnN}\\]$`),
      );
      expect(q.quoted.length).toBeLessThan(limits.SHORTENED_REQUEST_CHARS + 60);
      // Its start, or the reference alone once even that no longer fits.
      const [start] = q.quoted.split(' … ');
      expect(q.text.startsWith(start) || start.startsWith('[shortened;')).toBe(true);
    }
    expect(quoted[3].quoted.startsWith('Request 4: word0')).toBe(true);
    const used = quoted.reduce((sum, q) => sum + counter.count(q.quoted), 0);
    expect(used).toBeLessThanOrEqual(limits.SUMMARY_REQUESTS_SHARE * contextWindow);
  });

  it('cuts a shortened request to SHORTENED_REQUEST_CHARS of the limits it is given', () => {
    const requests = [1, 2, 3].map((n) => req(n, 150));
    const each = Math.max(...requests.map((r) => counter.count(r.text)));
    const contextWindow = Math.ceil((2.5 * each) / limits.SUMMARY_REQUESTS_SHARE);
    const shortStart = (l: typeof limits) =>
      quoteRequests(requests, contextWindow, l, counter)[0].quoted.split(' … ')[0];
    expect(shortStart(limits)).toBe(requests[0].text.slice(0, limits.SHORTENED_REQUEST_CHARS).trim());
    const tighter = resolveLimits({ ...limits, SHORTENED_REQUEST_CHARS: 50 });
    expect(shortStart(tighter)).toBe(requests[0].text.slice(0, 50).trim());
  });

  it('never keeps an old request whole once a newer one was shortened', () => {
    const quoted = quoteRequests([req(1, 1), req(2, 400), req(3, 5)], 1_000, limits, counter);
    expect(quoted.map((q) => q.shortened)).toEqual([true, true, false]);
  });

  it('leaves out the oldest once even their references are past the share', () => {
    const requests = Array.from({ length: 200 }, (_, i) => req(i + 1, 3));
    const contextWindow = 1_000;
    const quoted = quoteRequests(requests, contextWindow, limits, counter);
    expect(quoted.length).toBeGreaterThan(0);
    expect(quoted.length).toBeLessThan(requests.length);
    // The newest are the ones kept, still in order.
    expect(quoted.map((q) => q.turnN)).toEqual(requests.slice(-quoted.length).map((r) => r.turnN));
    const used = quoted.reduce((sum, q) => sum + counter.count(q.quoted), 0);
    expect(used).toBeLessThanOrEqual(limits.SUMMARY_REQUESTS_SHARE * contextWindow);
  });

  describe('with the tokens stored with each request (how the worker reads them)', () => {
    const texts = [
      'Tìm doanh thu quý 3 trong báo cáo, rồi so sánh với quý 2.',
      'Line one\nline two\n\n> already quoted',
      '/summarise-report please, with the 😀 figures: 4.2M',
      '  padded  ',
      '123 starts with a number',
      ':\n/',
      '<|endoftext|> is typed text',
    ];
    const stored = (n: number, text: string, steering = false) => ({
      turnN: n,
      messageId: `m${n}`,
      ...personRequest(text, steering),
    });

    it('keeps the text the model read: leading slugs removed from an opening message, steering as typed', () => {
      expect(personRequest('/summarise-report please', false).text).toBe('please');
      expect(personRequest('/summarise-report please', true).text).toBe('/summarise-report please');
      expect(personRequest('  padded  ', false).text).toBe('padded');
    });

    it('chooses and bounds exactly as counting each entry does, at every share', () => {
      for (const first of [1, 98, 999, 1_000, 123_456]) {
        const requests = texts.map((t, i) => stored(first + i, t));
        const counted = requests.map(({ tokens: _tokens, ...r }) => r);
        const whole = counted.reduce((sum, r) => sum + counter.count(`Turn ${r.turnN}:\n> ${r.text}`), 0);
        // Around the share where every entry is exactly whole, and far below it.
        for (const share of [whole + 1, whole, whole - 1, Math.floor(whole / 2), 40]) {
          const contextWindow = share / limits.SUMMARY_REQUESTS_SHARE;
          expect(quoteRequests(requests, contextWindow, limits, counter)).toEqual(
            quoteRequests(counted, contextWindow, limits, counter),
          );
        }
      }
    });

    it("measures a `Turn N:` line as the encoder counts it, for any turn's number of digits", () => {
      const turns = [
        ...Array.from({ length: 20_000 }, (_, n) => n),
        99_999,
        100_000,
        123_456_789,
        2 ** 31 - 1,
      ];
      const wrong = turns.filter((n) => turnLineTokens(n) !== textTokens(`Turn ${n}:\n`));
      expect(wrong).toEqual([]);
    });

    it('takes a stored count as it is, without counting the text again', () => {
      const requests = texts.map((t, i) => stored(i + 1, t));
      const contextWindow = 60 / limits.SUMMARY_REQUESTS_SHARE;
      const counted = quoteRequests(requests, contextWindow, limits, counter);
      expect(counted.filter((q) => !q.shortened).length).toBeLessThan(texts.length);
      // Stored as nothing but their `Turn N:` lines, all of them fit whole.
      const weightless = requests.map((r) => ({ ...r, tokens: 0 }));
      expect(quoteRequests(weightless, contextWindow, limits, counter).map((q) => q.shortened)).toEqual(
        texts.map(() => false),
      );
    });
  });

  it('lists the requests in the prompt as they must be kept', () => {
    const prompt = buildCompactionPrompt(
      input({ contextWindow: 400, window: { summary: null, turns: [chat(1, req(1, 200).text, 'ok')] } }),
    );
    expect(prompt.requests[0].shortened).toBe(true);
    expect(materialOf(prompt)).toContain(`Turn 1:\n> ${prompt.requests[0].quoted}`);
    expect(materialOf(prompt)).toContain(`Turn 2:\n> Now compare it with Q2 please.`);
  });
});

describe('the prompt fits the context window less SUMMARY_OUTPUT_SHARE', () => {
  const counter = new TokenCounter();
  /** A turn with a search whose result is cut in the prompt, and an answer. */
  const busy = (n: number) =>
    turn(n, [
      user(`Request ${n}: check region ${n % 7}.`),
      assistant(
        narration('Looking.'),
        use(`c${n}`, 'search_attachments', `{"query":"region ${n}"}`),
        result(`c${n}`, `Region ${n}: ${'figures '.repeat(60)}`, { ref: `tr_${n}` }),
      ),
      assistant(text(`Region ${n} grew.`)),
    ]);
  const long = (over: Partial<CompactionPromptInput> = {}) =>
    input({
      window: { summary: null, turns: Array.from({ length: 300 }, (_, i) => busy(i + 1)) },
      current: { n: 301, messages: messages(TurnId('t301'), [user('Now sum it all up.')]) },
      contextWindow: 16_000,
      counter,
      ...over,
    });
  const fits = (p: CompactionPrompt, contextWindow: number) =>
    expect(projectTokens(p, { counter })).toBeLessThanOrEqual(summaryPromptBudget(contextWindow, limits));
  const shownTurns = (p: CompactionPrompt) =>
    [...materialOf(p).matchAll(/^### Turn (\d+)/gm)].map((m) => Number(m[1]));

  it('is the window less the answer share, overridable', () => {
    expect(summaryPromptBudget(128_000, limits)).toBe(96_000);
    expect(summaryPromptBudget(128_000, resolveLimits({ SUMMARY_OUTPUT_SHARE: 0.5 }))).toBe(64_000);
  });

  it('shows a conversation that fits whole, with no note', () => {
    const prompt = buildCompactionPrompt(long({ contextWindow: 1_000_000 }));
    expect(prompt.turnsLeftOut).toBeNull();
    expect(shownTurns(prompt)).toEqual(Array.from({ length: 301 }, (_, i) => i + 1));
    expect(materialOf(prompt)).not.toContain('left out for length');
  });

  it('keeps the newest turns whole, leaves the oldest out with a note, and keeps every request', () => {
    // A window whose requests share holds all 301 requests as the section lists them.
    const prompt = buildCompactionPrompt(long({ contextWindow: 18_000 }));
    fits(prompt, 18_000);
    const shown = shownTurns(prompt);
    const first = shown[0];
    expect(first).toBeGreaterThan(10);
    // The recent end in one piece, up to the current turn, each whole.
    expect(shown).toEqual(Array.from({ length: 302 - first }, (_, i) => first + i));
    for (const n of shown.slice(0, -1)) {
      expect(materialOf(prompt)).toContain(
        `### Turn ${n}\nPerson: Request ${n}: check region ${n % 7}.\nAgent called search_attachments {"query":"region ${n}"} (call c${n})\nResult of c${n} (ref:tr_${n}): Region ${n}: `,
      );
      expect(materialOf(prompt)).toContain(`Agent: Region ${n} grew.`);
    }
    expect(prompt.turnsLeftOut).toEqual({ from: 1, to: first - 1 });
    expect(materialOf(prompt)).toContain(
      `## Conversation\n\n[Turns 1–${first - 1} (${first - 1} turns) are left out for length; their requests are under "Requests to keep".]\n\n### Turn ${first}\n`,
    );
    // Every request, the left-out turns' included, verbatim.
    expect(prompt.requestsLeftOut).toBeNull();
    expect(prompt.requests.map((r) => [r.turnN, r.quoted])).toEqual([
      ...Array.from({ length: 300 }, (_, i) => [i + 1, `Request ${i + 1}: check region ${(i + 1) % 7}.`]),
      [301, 'Now sum it all up.'],
    ]);
  });

  it('carries the earlier summary whole and covers turns 1–N, leaving out from the first turn after it', () => {
    const turns = Array.from({ length: 300 }, (_, i) => busy(i + 5));
    const prompt = buildCompactionPrompt(
      long({
        window: { summary: { turnN: 4, block: earlier }, turns },
        current: { n: 305, messages: messages(TurnId('t305'), [user('/compact')]) },
        trigger: 'MANUAL',
      }),
    );
    fits(prompt, 16_000);
    expect(prompt.heading).toBe('Summary of turns 1–304');
    expect(materialOf(prompt).startsWith(`${summaryNote(earlier)}\n\n${earlier.summary}\n\n`)).toBe(true);
    const first = shownTurns(prompt)[0];
    expect(prompt.turnsLeftOut).toEqual({ from: 5, to: first - 1 });
    expect(shownTurns(prompt).at(-1)).toBe(304);
  });

  describe('requests past their share even as references', () => {
    const chats = Array.from({ length: 500 }, (_, i) =>
      chat(i + 1, `Question ${i + 1}: how did region ${(i + 1) % 7} do?`, 'Fine.'),
    );
    const tight = (over: Partial<CompactionPromptInput> = {}) =>
      long({ window: { summary: null, turns: chats }, contextWindow: 4_000, ...over });

    it('names the oldest by their turns in one line, which the summary must keep', () => {
      const prompt = buildCompactionPrompt(tight());
      fits(prompt, 4_000);
      const oldest = prompt.requests[0].turnN;
      expect(prompt.requestsLeftOut).toEqual({ from: 1, to: oldest - 1 });
      expect(prompt.requests.at(-1)?.turnN).toBe(301);
      const line = leftOutRequests({ from: 1, to: oldest - 1 });
      expect(materialOf(prompt)).toContain(
        `## Requests to keep (${prompt.requests.length}, oldest first)\n\nTurns 1–${oldest - 1}:\n> ${line}\n\nTurn ${oldest}:\n`,
      );
      expect(systemOf(prompt)).toContain('so is the line standing for the requests not quoted');

      const { summary } = finishSummary('Summary of turns 1–301\n\n## Requests\n- none', prompt);
      expect(summary).toContain(`- Turns 1–${oldest - 1}: ${line}`);
      for (const r of prompt.requests) expect(summary).toContain(`- Turn ${r.turnN}: ${r.quoted}`);
      const kept = finishSummary(
        `Summary of turns 1–301\n\n## Requests\n- Turns 1–${oldest - 1}: ${line}`,
        prompt,
      );
      expect(kept.summary.match(/the requests of turns/g)).toHaveLength(1);
    });

    it('reads the same from the newest turns alone, once some of them are left out (how the worker reads)', () => {
      const whole = buildCompactionPrompt(tight());
      const newest = { summary: null, turns: chats.slice(-100) };
      const people = personRequests(chats.slice(-200));
      expect(summaryRequests(tight({ window: newest, people })).leftOut).not.toBeNull();
      const partial = buildCompactionPrompt(tight({ window: newest, people }));
      expect(partial.turnsLeftOut).not.toBeNull();
      expect(partial.messages).toEqual(whole.messages);
      expect(partial.requests).toEqual(whole.requests);
    });
  });
});

// Paragraphs of the Vietnamese source page (libs/dal/src/testing/fixtures/source-page.vi.txt).
const VIETNAMESE = [
  'Lượt tự nén trước lần gọi mô hình có đầu vào dự kiến chạm 85% cửa sổ ngữ cảnh của mô hình, và nén lại khi gateway báo tràn.',
  'Tóm tắt lỗi trước một lần gọi thì được ghi log và lần gọi vẫn chạy. Tóm tắt lỗi sau khi tràn thì lượt thất bại.',
  'Gõ /compact, có thể kèm chỉ dẫn cho bản tóm tắt. Lệnh mở một lượt chỉ để tóm tắt lịch sử và kết thúc mà không vào vòng lặp agent.',
  'Portal không lưu ngôn ngữ cho từng người, và kết quả tool cùng tài liệu chiếm phần lớn bản ghi. Chính lời của bạn cho mô hình biết bạn viết bằng ngôn ngữ nào.',
  'Bản tóm tắt giữ gì. Mọi yêu cầu nguyên văn, các quyết định, công việc đã làm cùng đường dẫn và mã artifact, việc còn dở cùng danh sách tác vụ.',
];

describe('the language sample', () => {
  const long = 'word '.repeat(200).trim();
  it.each([
    ['a runtime note', ['[Attachment a1: report.pdf (application/pdf, document)]\nPages read 2/2'], []],
    ['a replayed summary section', ['## Facts\n- Q3 was $4.2M', 'Summary of turns 1–3 and more words'], []],
    ['a paragraph that is a command', ['/compact', '/market-research', '/Fact-check'], []],
    [
      'leading /slug tokens',
      ['/market-research /fact-check compare these two reports'],
      ['compare these two reports'],
    ],
    ['/compact with instructions', ['/compact keep every figure'], ['keep every figure']],
    ['fewer than three words', ['ref:tr_8f2c', 'ok thanks', 'Yes, do that.'], ['Yes, do that.']],
    [
      'a Chinese paragraph counts words, not spaces',
      ['请比较第三季度和第二季度的收入'],
      ['请比较第三季度和第二季度的收入'],
    ],
    [
      'paragraphs split on blank lines',
      ['First paragraph here.\n\nSecond paragraph here.'],
      ['First paragraph here.', 'Second paragraph here.'],
    ],
    ['each cut to SUMMARY_PARAGRAPH_CHARS', [long], [long.slice(0, limits.SUMMARY_PARAGRAPH_CHARS)]],
  ])('leaves out or trims %s', (_name, texts, expected) => {
    expect(languageSample(texts, limits)).toEqual(expected);
  });

  it('quotes only the latest SUMMARY_LANGUAGE_PARAGRAPHS', () => {
    const texts = Array.from({ length: 12 }, (_, i) => `paragraph number ${i + 1}`);
    expect(languageSample(texts, limits)).toEqual(texts.slice(4));
    expect(languageSample(texts, resolveLimits({ SUMMARY_LANGUAGE_PARAGRAPHS: 2 }))).toEqual(texts.slice(10));
  });

  it('quotes a Vietnamese majority, the current turn and the manual instructions included, and asks for the majority language', () => {
    const turns = [
      chat(1, 'Please read the attached report and list the figures.', 'Done.'),
      chat(2, `${VIETNAMESE[0]}\n\n${VIETNAMESE[1]}`, 'OK.'),
      chat(3, `/market-research ${VIETNAMESE[2]}`, 'OK.'),
      chat(4, 'ok', 'OK.'),
      chat(5, VIETNAMESE[3], 'OK.'),
    ];
    const prompt = buildCompactionPrompt(
      input({
        trigger: 'MANUAL',
        window: { summary: null, turns },
        current: { n: 6, messages: messages(TurnId('t6'), [user(`/compact ${VIETNAMESE[4]}`)]) },
      }),
    );
    expect(prompt.languageSample).toEqual([
      'Please read the attached report and list the figures.',
      ...VIETNAMESE,
    ]);
    const material = materialOf(prompt);
    for (const p of VIETNAMESE) expect(material).toContain(`> ${p}`);
    expect(systemOf(prompt)).toContain(
      'write the summary in the language most of the quoted paragraphs of the person (under "Language sample") are in',
    );
  });

  it('has nothing to quote from the earlier summary', () => {
    const prompt = buildCompactionPrompt(
      input({
        window: { summary: { turnN: 4, block: earlier }, turns: [] },
        current: { n: 5, messages: messages(TurnId('t5'), [user('ok')]) },
      }),
    );
    expect(prompt.languageSample).toEqual([]);
    expect(systemOf(prompt)).toContain('there are none, so keep the language of the conversation');
  });
});

describe('finishSummary: requests verbatim are guaranteed', () => {
  const prompt = {
    heading: 'Summary of turns 1–4',
    requests: [
      {
        turnN: 1,
        messageId: 'm1',
        text: 'Find the Q3 revenue.',
        quoted: 'Find the Q3 revenue.',
        shortened: false,
      },
      {
        turnN: 3,
        messageId: 'm3',
        text: 'Compare it\nwith Q2.',
        quoted: 'Compare it\nwith Q2.',
        shortened: false,
      },
    ],
  };
  const sections = (requests: string) =>
    `Summary of turns 1–4\n\n## Requests\n${requests}\n\n## Decisions\n- none\n\n## Facts\n- $4.2M (ref:tr_a)`;

  it.each([
    ['every request present', sections('- Turn 1: Find the Q3 revenue.\n- Turn 3: Compare it with Q2.'), []],
    ['one missing', sections('- Turn 1: Find the Q3 revenue.'), [3]],
    ['all missing', sections('- The person asked about revenue.'), [1, 3]],
    ['present out of order', sections('- Turn 3: Compare it  with\tQ2.\n- Turn 1: Find the Q3 revenue.'), []],
  ])('%s', (_name, answer, restored) => {
    const { summary, restored: missing } = finishSummary(answer, prompt);
    expect(missing.map((r) => r.turnN)).toEqual(restored);
    for (const r of prompt.requests)
      expect(summary.replace(/\s+/g, ' ')).toContain(r.quoted.replace(/\s+/g, ' '));
    const requestsSection = summary.split('## Requests')[1].split('## Decisions')[0];
    for (const n of restored) expect(requestsSection).toContain(`- Turn ${n}: `);
    expect(summary).toContain('## Decisions\n- none');
  });

  it('adds a Requests section when the answer has none, and fixes or adds the opening line', () => {
    const fixed = finishSummary('Summary of turns 1-2\n\n## Facts\n- x', prompt).summary;
    expect(fixed.split('\n').slice(0, 5)).toEqual([
      'Summary of turns 1–4',
      '',
      '## Requests',
      '- Turn 1: Find the Q3 revenue.',
      '- Turn 3: Compare it',
    ]);
    expect(fixed).toContain('  with Q2.');
    const added = finishSummary('Local chat: hello', { ...prompt, requests: [] }).summary;
    expect(added).toBe('Summary of turns 1–4\n\nLocal chat: hello');
  });

  it('checks a shortened request in the form it was listed', () => {
    const short = {
      turnN: 1,
      messageId: 'm1',
      text: 'long…',
      quoted: 'long … [shortened; whole request: turn 1, message m1]',
      shortened: true,
    };
    const { summary, restored } = finishSummary('Summary of turns 1–4\n\n## Requests\n', {
      ...prompt,
      requests: [short],
    });
    expect(restored).toEqual([short]);
    expect(summary).toBe(
      'Summary of turns 1–4\n\n## Requests\n- Turn 1: long … [shortened; whole request: turn 1, message m1]',
    );
  });
});

describe('summaryForPeople', () => {
  it.each([
    ['- Q3 was $4.2M (ref:tr_8f2c)', '- Q3 was $4.2M'],
    ['- Q3 was $4.2M [ref:tr_8f2c].', '- Q3 was $4.2M.'],
    ['- Q3 was $4.2M, see ref:tr_8f2c and ref:tr_99', '- Q3 was $4.2M, see and'],
    ['- paths stay: /reports/q3.md', '- paths stay: /reports/q3.md'],
  ])('%s', (summary, shown) => {
    expect(summaryForPeople(summary)).toBe(shown);
  });
});
