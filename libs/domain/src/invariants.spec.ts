import { TurnId } from './ids';
import { isDomainError } from './domain-error';
import {
  appendBlock,
  assertAppend,
  assertInvariants,
  checkAppend,
  checkBlockRoles,
  checkCompaction,
  checkCompactions,
  checkPendingRequests,
  checkTerminalText,
  checkToolResults,
  checkToolUsesAnswered,
  checkTurn,
  type InvariantCode,
  type InvariantViolation,
} from './invariants';
import type { Block, CompactionBlock } from './block.types';
import type { TurnTranscript } from './turn.types';
import {
  approval,
  assistant,
  clarification,
  compaction,
  makeTurn,
  narration,
  steering,
  text,
  thinking,
  toolResult,
  toolUse,
  user,
} from './testing';

interface Case {
  name: string;
  turn: TurnTranscript;
  /** What the invariant's own function returns. */
  codes: InvariantCode[];
  /** What checkTurn returns, when the turn breaks more than this invariant. */
  all?: InvariantCode[];
}

const codes = (vs: InvariantViolation[]) => vs.map((v) => v.code);
const ask = user(text('Find the Q3 revenue in the report.'));

function runTable(check: (t: TurnTranscript) => InvariantViolation[], invariant: number, cases: Case[]) {
  it.each(cases)('$name', ({ turn, codes: expected, all }) => {
    const found = check(turn);
    expect(codes(found)).toEqual(expected);
    expect(found.every((v) => v.invariant === invariant)).toBe(true);
    expect(codes(checkTurn(turn))).toEqual(all ?? expected);
  });
}

describe('invariant 1: only text is terminal', () => {
  runTable(checkTerminalText, 1, [
    {
      name: 'answer text ends a completed turn',
      turn: makeTurn('completed', [ask, assistant(text('$4.2M'))]),
      codes: [],
    },
    {
      name: 'calls, narration and thinking before the answer',
      turn: makeTurn('completed', [
        ask,
        assistant(thinking('hm'), narration('Let me look.'), toolUse('c1'), toolResult('c1'), text('$4.2M')),
      ]),
      codes: [],
    },
    {
      name: 'manual compaction: [compaction, text]',
      turn: makeTurn(
        'completed',
        [
          user(text('/compact')),
          assistant(compaction({ trigger: 'MANUAL' }), text('Context summarised: turns 1–3.')),
        ],
        { kind: 'compaction', n: 4 },
      ),
      codes: [],
    },
    {
      name: 'steering answered by a later assistant message',
      turn: makeTurn('completed', [
        ask,
        assistant(text('Q3 was')),
        user(steering('in euros')),
        assistant(text('€3.9M')),
      ]),
      codes: [],
    },
    {
      name: 'a cut-off turn may end on anything',
      turn: makeTurn('cut_off', [ask, assistant(thinking('hm'))]),
      codes: [],
    },
    { name: 'a failed turn may have no answer', turn: makeTurn('failed', [ask]), codes: [] },
    {
      name: 'thinking last',
      turn: makeTurn('completed', [ask, assistant(text('$4.2M'), thinking('done'))]),
      codes: ['terminal_block_not_text'],
    },
    {
      name: 'narration last',
      turn: makeTurn('completed', [ask, assistant(narration('Let me look.'))]),
      codes: ['terminal_block_not_text'],
    },
    {
      name: 'tool result last',
      turn: makeTurn('completed', [ask, assistant(toolUse('c1'), toolResult('c1'))]),
      codes: ['terminal_block_not_text'],
    },
    {
      name: 'compaction last',
      turn: makeTurn('completed', [ask, assistant(text('x'), compaction())]),
      codes: ['terminal_block_not_text'],
    },
    { name: 'no assistant message', turn: makeTurn('completed', [ask]), codes: ['terminal_block_not_text'] },
    {
      name: 'empty assistant message',
      turn: makeTurn('completed', [ask, assistant()]),
      codes: ['terminal_block_not_text'],
    },
    {
      name: 'steering left unread at the end',
      turn: makeTurn('completed', [ask, assistant(text('$4.2M')), user(steering('and Q4?'))]),
      codes: ['terminal_block_not_text'],
    },
  ]);

  it('names the offending block', () => {
    const turn = makeTurn('completed', [ask, assistant(text('$4.2M'), thinking('done'))]);
    expect(checkTerminalText(turn)).toEqual([
      { invariant: 1, code: 'terminal_block_not_text', message: expect.any(String), blockId: 'b3' },
    ]);
  });
});

describe('invariant 2: a result answers exactly one earlier use', () => {
  runTable(checkToolResults, 2, [
    {
      name: 'parallel calls answered out of order',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1'), toolUse('c2'), toolResult('c2'), toolResult('c1'), text('a')),
      ]),
      codes: [],
    },
    {
      name: 'a result in a later assistant message, after steering',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1')),
        user(steering('hurry')),
        assistant(toolResult('c1'), text('a')),
      ]),
      codes: [],
    },
    {
      name: 'result without any use',
      turn: makeTurn('running', [ask, assistant(toolResult('c9'))]),
      codes: ['tool_result_without_use'],
    },
    {
      name: 'result before its use',
      turn: makeTurn('running', [ask, assistant(toolResult('c1'), toolUse('c1'))]),
      codes: ['tool_result_before_use'],
    },
    {
      name: 'two results for one use',
      turn: makeTurn('running', [ask, assistant(toolUse('c1'), toolResult('c1'), toolResult('c1', 'error'))]),
      codes: ['tool_result_duplicate'],
    },
    {
      name: 'two uses with one call id',
      turn: makeTurn('running', [ask, assistant(toolUse('c1'), toolUse('c1'), toolResult('c1'))]),
      codes: ['tool_use_duplicate'],
    },
    {
      name: 'a result answers a use of its own turn only',
      turn: makeTurn('completed', [ask, assistant(toolResult('c_from_turn_6'), text('a'))]),
      codes: ['tool_result_without_use'],
    },
  ]);

  it('names the offending result', () => {
    const turn = makeTurn('running', [ask, assistant(toolUse('c1'), toolResult('c1'), toolResult('c1'))]);
    expect(checkToolResults(turn)).toEqual([expect.objectContaining({ blockId: 'b4' })]);
  });
});

describe('invariant 3: a completed turn has no unanswered call', () => {
  runTable(checkToolUsesAnswered, 3, [
    {
      name: 'every call answered',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1'), toolUse('c2'), toolResult('c1'), toolResult('c2'), text('a')),
      ]),
      codes: [],
    },
    {
      name: 'a denied approval is answered by its denied result',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1', 'http_tool'), approval('c1', false), toolResult('c1', 'denied'), text('a')),
      ]),
      codes: [],
    },
    {
      name: 'an answered clarification with its result',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', 'Q3'), toolResult('c1'), text('a')),
      ]),
      codes: [],
    },
    {
      name: 'a cut-off turn keeps its open call',
      turn: makeTurn('cut_off', [ask, assistant(toolUse('c1'))]),
      codes: [],
    },
    {
      name: 'a failed turn keeps its open call',
      turn: makeTurn('failed', [ask, assistant(toolUse('c1'), text('partial'))]),
      codes: [],
    },
    {
      name: 'an open call in a completed turn',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1'), toolUse('c2'), toolResult('c2'), text('a')),
      ]),
      codes: ['tool_use_unanswered'],
    },
    {
      name: 'a denied approval without its result',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1', 'http_tool'), approval('c1', false), text('a')),
      ]),
      codes: ['tool_use_unanswered'],
    },
  ]);
});

describe('invariant 4: blocks in their role', () => {
  runTable(checkBlockRoles, 4, [
    {
      name: 'the person writes text, steering included',
      turn: makeTurn('completed', [ask, assistant(text('a')), user(steering('more')), assistant(text('b'))]),
      codes: [],
    },
    {
      name: 'every other kind in assistant messages',
      turn: makeTurn('completed', [
        ask,
        assistant(
          compaction(),
          thinking('t'),
          narration('n'),
          toolUse('c1'),
          approval('c1', true),
          toolResult('c1'),
          toolUse('c2', 'ask_clarification'),
          clarification('c2', 'yes'),
          toolResult('c2'),
          text('a'),
        ),
      ]),
      codes: [],
    },
    ...(
      [
        ['thinking', thinking('t')],
        ['tool_use', toolUse('c1')],
        ['compaction', compaction()],
        ['answered clarification', clarification('c1', 'a')],
        ['narration', narration('n')],
      ] as const
    ).map(([kind, block]) => ({
      name: `${kind} in a user message`,
      turn: makeTurn('cut_off', [user(text('q'), block)]),
      codes: ['block_in_wrong_role' as const],
    })),
    {
      name: 'tool result in a user message',
      turn: makeTurn('running', [ask, assistant(toolUse('c1')), user(toolResult('c1'))]),
      codes: ['block_in_wrong_role'],
    },
    {
      name: 'steering text in an assistant message',
      turn: makeTurn('running', [ask, assistant(steering('more'))]),
      codes: ['block_in_wrong_role'],
    },
  ]);
});

describe('invariant 5: a pending request is last and pauses the turn', () => {
  runTable(checkPendingRequests, 5, [
    {
      name: 'paused on a clarification',
      turn: makeTurn('paused', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', null)),
      ]),
      codes: [],
    },
    {
      name: 'paused on an approval after other results',
      turn: makeTurn('paused', [
        ask,
        assistant(toolUse('c1'), toolUse('c2', 'http_tool'), toolResult('c1'), approval('c2', null)),
      ]),
      codes: [],
    },
    {
      name: 'a resumed turn: the request answered, running again',
      turn: makeTurn('running', [
        ask,
        assistant(toolUse('c1', 'http_tool'), approval('c1', true), toolResult('c1')),
      ]),
      codes: [],
    },
    {
      name: 'pending request followed by a block of its message',
      turn: makeTurn('paused', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', null), thinking('t')),
      ]),
      codes: ['request_not_last'],
    },
    {
      name: 'pending request followed by a later message',
      turn: makeTurn('paused', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', null)),
        user(steering('hello?')),
      ]),
      codes: ['request_not_last'],
    },
    {
      name: 'two pending requests',
      turn: makeTurn('paused', [
        ask,
        assistant(
          toolUse('c1', 'http_tool'),
          toolUse('c2', 'http_tool'),
          approval('c1', null),
          approval('c2', null),
        ),
      ]),
      codes: ['request_not_last'],
    },
    {
      name: 'paused with nothing pending',
      turn: makeTurn('paused', [ask, assistant(toolUse('c1', 'http_tool'), approval('c1', true))]),
      codes: ['paused_without_request'],
    },
    {
      name: 'pending while running',
      turn: makeTurn('running', [ask, assistant(toolUse('c1', 'http_tool'), approval('c1', null))]),
      codes: ['request_pending_not_paused'],
    },
    {
      name: 'pending in a completed turn',
      turn: makeTurn('completed', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', null)),
      ]),
      codes: ['request_pending_not_paused'],
      all: ['terminal_block_not_text', 'tool_use_unanswered', 'request_pending_not_paused'],
    },
    {
      name: 'pending in a cut-off turn',
      turn: makeTurn('cut_off', [
        ask,
        assistant(toolUse('c1', 'ask_clarification'), clarification('c1', null)),
      ]),
      codes: ['request_pending_not_paused'],
    },
  ]);
});

describe('invariant 6: a valid compaction', () => {
  const withCompaction = (over: Partial<Omit<CompactionBlock, 'id' | 'seq' | 'kind'>>) =>
    makeTurn('completed', [user(text('/compact')), assistant(compaction(over), text('done'))], {
      kind: 'compaction',
    });
  runTable(checkCompactions, 6, [
    {
      name: 'manual, turns 1–1',
      turn: withCompaction({ trigger: 'MANUAL', coversTurns: { from: 1, to: 1 } }),
      codes: [],
    },
    {
      name: 'auto, turns 1–17',
      turn: withCompaction({ trigger: 'AUTO', coversTurns: { from: 1, to: 17 } }),
      codes: [],
    },
    { name: 'empty summary', turn: withCompaction({ summary: '' }), codes: ['compaction_invalid'] },
    { name: 'blank summary', turn: withCompaction({ summary: ' \n\t' }), codes: ['compaction_invalid'] },
    {
      name: 'unknown trigger',
      turn: withCompaction({ trigger: 'auto' as CompactionBlock['trigger'] }),
      codes: ['compaction_invalid'],
    },
    {
      name: 'not from turn 1',
      turn: withCompaction({ coversTurns: { from: 2, to: 5 } }),
      codes: ['compaction_invalid'],
    },
    {
      name: 'ends before it starts',
      turn: withCompaction({ coversTurns: { from: 1, to: 0 } }),
      codes: ['compaction_invalid'],
    },
    {
      name: 'every compaction of the turn is checked',
      turn: makeTurn('running', [
        ask,
        assistant(compaction(), toolUse('c1'), toolResult('c1'), compaction({ summary: '' })),
      ]),
      codes: ['compaction_invalid'],
    },
  ]);

  it('gives one violation per block, naming every reason', () => {
    const block = {
      id: 'b1',
      seq: 1,
      kind: 'compaction',
      summary: '',
      trigger: 'X',
      coversTurns: { from: 3, to: 2 },
    };
    const found = checkCompaction(block as unknown as CompactionBlock);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ invariant: 6, code: 'compaction_invalid', blockId: 'b1' });
    expect(found[0].message).toMatch(/summary.*trigger.*start.*end/);
  });
});

describe('checkTurn and assertInvariants', () => {
  it('reports every broken invariant in order', () => {
    const turn = makeTurn('completed', [
      user(text('q'), thinking('t')),
      assistant(toolResult('c9'), toolUse('c1'), compaction({ summary: '' }), narration('n')),
    ]);
    expect(checkTurn(turn).map((v) => [v.invariant, v.code])).toEqual([
      [1, 'terminal_block_not_text'],
      [2, 'tool_result_without_use'],
      [3, 'tool_use_unanswered'],
      [4, 'block_in_wrong_role'],
      [6, 'compaction_invalid'],
    ]);
  });

  it('assertInvariants passes a valid turn and throws invariant_violated with the violations', () => {
    expect(() => assertInvariants(makeTurn('completed', [ask, assistant(text('a'))]))).not.toThrow();
    const turn = makeTurn('completed', [ask, assistant(narration('n'))]);
    let error: unknown;
    try {
      assertInvariants(turn);
    } catch (e) {
      error = e;
    }
    expect(isDomainError(error, 'invariant_violated')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ turnId: 't1', violations: checkTurn(turn) });
  });
});

describe('checkAppend', () => {
  const open = makeTurn('running', [ask, assistant(narration('Let me look.'), toolUse('c1'))]);
  const last = open.messages[1];
  const block = (b: object, seq: number) => ({ id: `n${seq}`, seq, ...b }) as Block;

  it('accepts what an open turn may hold, without asking it to be complete', () => {
    expect(checkAppend(open, last, block(thinking('t'), 3))).toEqual([]);
    expect(checkAppend(open, last, block(toolResult('c1'), 3))).toEqual([]);
    expect(checkAppend(open, last, block(clarification('c1', null), 3))).toEqual([]);
    const steeringMessage = {
      id: 'm3',
      turnId: TurnId('t1'),
      role: 'user' as const,
      blocks: [],
      attachmentIds: [],
    };
    expect(checkAppend(open, steeringMessage, block(steering('stop'), 3))).toEqual([]);
  });

  it.each([
    ['a result without a use', toolResult('c7'), 'tool_result_without_use'],
    ['steering into the assistant message', steering('x'), 'block_in_wrong_role'],
    ['an invalid compaction', compaction({ coversTurns: { from: 0, to: 3 } }), 'compaction_invalid'],
  ])('refuses %s', (_name, draft, code) => {
    expect(codes(checkAppend(open, last, block(draft, 3)))).toEqual([code]);
  });

  it('refuses a second result for a call', () => {
    const answered = appendBlock(open, last, block(toolResult('c1'), 3));
    expect(codes(checkAppend(answered, answered.messages[1], block(toolResult('c1'), 4)))).toEqual([
      'tool_result_duplicate',
    ]);
  });

  it('refuses anything after a pending request', () => {
    const paused = appendBlock(open, last, block(clarification('c1', null), 3));
    expect(codes(checkAppend(paused, paused.messages[1], block(text('more'), 4)))).toEqual([
      'request_not_last',
    ]);
    const later = { id: 'm3', turnId: TurnId('t1'), role: 'user' as const, blocks: [], attachmentIds: [] };
    expect(codes(checkAppend(paused, later, block(steering('hi'), 4)))).toEqual(['request_not_last']);
  });

  it('appendBlock adds to the named message, or adds the message', () => {
    const a = appendBlock(open, last, block(thinking('t'), 3));
    expect(a.messages.map((m) => m.blocks.length)).toEqual([1, 3]);
    const b = appendBlock(open, { ...last, id: 'm3', blocks: [] }, block(thinking('t'), 3));
    expect(b.messages.map((m) => m.blocks.length)).toEqual([1, 2, 1]);
    expect(open.messages[1].blocks).toHaveLength(2);
  });

  it('assertAppend throws invariant_violated', () => {
    expect(() => assertAppend(open, last, block(toolResult('c1'), 3))).not.toThrow();
    expect(() => assertAppend(open, last, block(toolResult('c8'), 3))).toThrow(
      expect.objectContaining({ code: 'invariant_violated' }),
    );
  });
});
