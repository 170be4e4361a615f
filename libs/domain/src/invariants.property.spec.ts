import fc from 'fast-check';
import type { Block } from './block.types';
import { checkTurn, type InvariantCode } from './invariants';
import type { TurnTranscript } from './turn.types';
import { renumber, wellFormedTurnArb } from './testing';

const codes = (t: TurnTranscript): InvariantCode[] => checkTurn(t).map((v) => v.code);

/** Block positions [message index, block index] matching `pick`, in recorded order. */
function positions(t: TurnTranscript, pick: (b: Block, role: string) => boolean): [number, number][] {
  return t.messages.flatMap((m, mi) =>
    m.blocks.flatMap((b, bi) => (pick(b, m.role) ? [[mi, bi] as [number, number]] : [])),
  );
}

function edit(t: TurnTranscript, mi: number, change: (blocks: Block[]) => Block[]): TurnTranscript {
  return renumber({
    ...t,
    messages: t.messages.map((m, i) => (i === mi ? { ...m, blocks: change([...m.blocks]) } : m)),
  });
}

const withResults = wellFormedTurnArb({ statuses: ['completed'], minToolCalls: 1 });
/** An index into a list the property has not seen yet, as a fraction. */
const choice = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
const at = <T>(xs: T[], r: number): T => xs[Math.floor(r * xs.length)];

describe('well-formed turns', () => {
  it('satisfy every invariant', () => {
    fc.assert(
      fc.property(wellFormedTurnArb(), (t) => expect(checkTurn(t)).toEqual([])),
      { numRuns: 500 },
    );
  });

  it('cover every status and both turn kinds', () => {
    const seen = new Set(fc.sample(wellFormedTurnArb(), 500).map((t) => `${t.turn.kind}:${t.turn.status}`));
    expect([...seen].sort()).toEqual(
      [
        'compaction:completed',
        'turn:completed',
        'turn:cut_off',
        'turn:failed',
        'turn:paused',
        'turn:queued',
        'turn:running',
      ].sort(),
    );
  });
});

describe('mutations are caught', () => {
  it('a dropped result leaves a call unanswered', () => {
    fc.assert(
      fc.property(withResults, choice, (t, r) => {
        const [mi, bi] = at(
          positions(t, (b) => b.kind === 'tool_result'),
          r,
        );
        const mutated = edit(t, mi, (bs) => bs.filter((_, i) => i !== bi));
        expect(codes(mutated)).toEqual(['tool_use_unanswered']);
      }),
    );
  });

  it('a duplicated result is a second answer', () => {
    fc.assert(
      fc.property(withResults, choice, (t, r) => {
        const [mi, bi] = at(
          positions(t, (b) => b.kind === 'tool_result'),
          r,
        );
        const mutated = edit(t, mi, (bs) => [
          ...bs.slice(0, bi + 1),
          { ...bs[bi], id: 'dup' },
          ...bs.slice(bi + 1),
        ]);
        expect(codes(mutated)).toEqual(['tool_result_duplicate']);
      }),
    );
  });

  it('a non-text block moved last is not terminal', () => {
    const arb = wellFormedTurnArb({ statuses: ['completed'] }).filter(
      (t) => positions(t, (b) => b.kind !== 'text').length > 0,
    );
    fc.assert(
      fc.property(arb, choice, (t, r) => {
        const [mi, bi] = at(
          positions(t, (b) => b.kind !== 'text'),
          r,
        );
        const moved = t.messages[mi].blocks[bi];
        const lastMi = t.messages.length - 1;
        let mutated = edit(t, mi, (bs) => bs.filter((_, i) => i !== bi));
        mutated = edit(mutated, lastMi, (bs) => [...bs, moved]);
        expect(codes(mutated)).toContain('terminal_block_not_text');
      }),
    );
  });

  it('narration or thinking after the answer is not terminal', () => {
    const arb = wellFormedTurnArb({ statuses: ['completed'] });
    const tail = fc.constantFrom<Block>(
      { id: 'x', seq: 0, kind: 'thinking', text: 't' },
      { id: 'x', seq: 0, kind: 'text', text: 'n', narration: true, steering: false },
    );
    fc.assert(
      fc.property(arb, tail, (t, b) => {
        const mutated = edit(t, t.messages.length - 1, (bs) => [...bs, b]);
        expect(codes(mutated)).toEqual(['terminal_block_not_text']);
      }),
    );
  });

  it('a tool use moved into a user message is in the wrong role', () => {
    fc.assert(
      fc.property(wellFormedTurnArb({ minToolCalls: 1 }), choice, (t, r) => {
        const [mi, bi] = at(
          positions(t, (b) => b.kind === 'tool_use'),
          r,
        );
        const use = t.messages[mi].blocks[bi];
        // The opening user message comes before every result, so only the role is wrong.
        let mutated = edit(t, mi, (bs) => bs.filter((_, i) => i !== bi));
        mutated = edit(mutated, 0, (bs) => [...bs, use]);
        expect(codes(mutated)).toEqual(['block_in_wrong_role']);
      }),
    );
  });

  it('steering in an assistant message is in the wrong role', () => {
    fc.assert(
      fc.property(wellFormedTurnArb({ statuses: ['completed'] }), (t) => {
        const mi = t.messages.length - 1;
        const mutated = edit(t, mi, (bs) =>
          bs.map((b, i) => (i === bs.length - 1 && b.kind === 'text' ? { ...b, steering: true } : b)),
        );
        expect(codes(mutated)).toEqual(['block_in_wrong_role']);
      }),
    );
  });

  it('a block after a pending request leaves it not last', () => {
    const after = fc.constantFrom<Block>(
      { id: 'x', seq: 0, kind: 'thinking', text: 't' },
      { id: 'x', seq: 0, kind: 'text', text: 'more', narration: false, steering: false },
      { id: 'x', seq: 0, kind: 'tool_use', callId: 'c_new', name: 'http_tool', arguments: '{}' },
    );
    fc.assert(
      fc.property(wellFormedTurnArb({ statuses: ['paused'] }), after, (t, b) => {
        const mutated = edit(t, t.messages.length - 1, (bs) => [...bs, b]);
        expect(codes(mutated)).toEqual(['request_not_last']);
      }),
    );
  });

  it('the pause and the pending request go together', () => {
    const settled = fc.constantFrom('completed', 'running', 'cut_off', 'failed') as fc.Arbitrary<'running'>;
    fc.assert(
      fc.property(wellFormedTurnArb({ statuses: ['paused'] }), settled, (t, status) => {
        expect(codes({ ...t, turn: { ...t.turn, status } })).toContain('request_pending_not_paused');
      }),
    );
    fc.assert(
      fc.property(wellFormedTurnArb({ statuses: ['completed', 'running', 'cut_off', 'failed'] }), (t) => {
        expect(codes({ ...t, turn: { ...t.turn, status: 'paused' } })).toEqual(['paused_without_request']);
      }),
    );
  });

  it('a compaction with a blank summary is invalid', () => {
    const arb = wellFormedTurnArb().filter((t) => positions(t, (b) => b.kind === 'compaction').length > 0);
    fc.assert(
      fc.property(arb, choice, fc.constantFrom('', ' ', '\n\t'), (t, r, summary) => {
        const [mi, bi] = at(
          positions(t, (b) => b.kind === 'compaction'),
          r,
        );
        const mutated = edit(t, mi, (bs) => bs.map((b, i) => (i === bi ? { ...b, summary } : b)));
        expect(codes(mutated)).toEqual(['compaction_invalid']);
      }),
    );
  });
});
