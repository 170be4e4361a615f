import { type MemoryWindow, TurnId, type TurnTranscript } from '@portal/domain';
import fc from 'fast-check';
import type { ChatMessage } from './chat.types';
import { assemblePrompt } from './prompt-stack';
import {
  assistant,
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
  type BlockDraft,
  type MessageDraft,
} from './testing/transcript.fixtures';

interface CallDraft {
  name: string;
  args: string;
  result: { outcome: 'ok' | 'error' | 'denied'; content: string; ref: string | null } | null;
}
interface StepDraft {
  steer: { interrupted: boolean } | null;
  thinking: boolean;
  narration: boolean;
  autoCompaction: boolean;
  calls: CallDraft[];
}
interface TurnDraft {
  kind: 'turn' | 'compaction';
  status: 'completed' | 'failed' | 'cut_off';
  slugs: string;
  steps: StepDraft[];
  answer: boolean;
}

const argsArb = fc.oneof(
  fc.constant('{"query":"Q3 revenue"}'),
  fc
    .string({ unit: 'grapheme', maxLength: 300 })
    .map((s) => JSON.stringify({ query: s, nested: { list: [s, 1] } })),
  fc.string({ unit: 'binary', maxLength: 260 }).map((s) => JSON.stringify({ raw: s })),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('', '{"q": ', '[1,2]', 'null', '"text"', '{"a":1}}'),
);
const callArb: fc.Arbitrary<CallDraft> = fc.record({
  name: fc.constantFrom('search_attachments', 'read_document', 'crm_lookup'),
  args: argsArb,
  result: fc.option(
    fc.record({
      outcome: fc.constantFrom<'ok' | 'error' | 'denied'>('ok', 'ok', 'error', 'denied'),
      content: fc.oneof(
        fc.string({ maxLength: 50 }),
        fc.nat(1200).map((n) => 'r'.repeat(n)),
      ),
      ref: fc.option(fc.constant('tr_x'), { nil: null }),
    }),
    { nil: null, freq: 5 },
  ),
});
const stepArb: fc.Arbitrary<StepDraft> = fc.record({
  steer: fc.option(fc.record({ interrupted: fc.boolean() }), { nil: null }),
  thinking: fc.boolean(),
  narration: fc.boolean(),
  autoCompaction: fc.nat(9).map((n) => n === 0),
  calls: fc.array(callArb, { maxLength: 5, size: 'max' }),
});
const turnArb: fc.Arbitrary<TurnDraft> = fc.record({
  kind: fc.constantFrom<'turn' | 'compaction'>('turn', 'turn', 'turn', 'turn', 'compaction'),
  status: fc.constantFrom<TurnDraft['status']>('completed', 'completed', 'failed', 'cut_off'),
  slugs: fc.constantFrom('', '/fact-check ', '/a /b-c '),
  steps: fc.array(stepArb, { maxLength: 5 }),
  answer: fc.boolean(),
});

/** Records a turn the way the orchestrator does: one assistant message per stretch between user messages. */
function record(tag: string, steps: StepDraft[], answer: boolean): MessageDraft[] {
  const out: MessageDraft[] = [];
  let current: BlockDraft[] = [];
  const flush = () => {
    if (current.length > 0) out.push(assistant(...current));
    current = [];
  };
  steps.forEach((step, k) => {
    if (step.steer) {
      if (step.steer.interrupted) current.push(text(`INTERRUPTED_${tag}_${k}`));
      flush();
      out.push(steer(`STEER_${tag}_${k}`));
    }
    if (step.autoCompaction) current.push({ ...compactionBlock(3) });
    if (step.thinking) current.push(thinking(`THINK_${tag}_${k}`));
    if (step.narration && step.calls.length > 0) current.push(narration(`NARR_${tag}_${k}`));
    const ids = step.calls.map((_, i) => `${tag}_c${k}_${i}`);
    step.calls.forEach((c, i) => current.push(use(ids[i], c.name, c.args)));
    step.calls.forEach((c, i) => {
      if (c.result)
        current.push(result(ids[i], c.result.content, { outcome: c.result.outcome, ref: c.result.ref }));
    });
  });
  if (answer) current.push(text(`ANSWER_${tag}`));
  flush();
  return out;
}

function build(draft: TurnDraft, n: number): TurnTranscript {
  if (draft.kind === 'compaction') {
    return turn(
      n,
      [
        user('/compact OPEN_COMPACT'),
        assistant({ ...compactionBlock(n - 1) }, text(`Context summarised: turns 1–${n - 1}.`)),
      ],
      { kind: 'compaction' },
    );
  }
  return turn(n, [user(`${draft.slugs}OPEN_t${n}`), ...record(`t${n}`, draft.steps, draft.answer)], {
    status: draft.status,
  });
}

interface Scenario {
  summary: boolean;
  turns: TurnDraft[];
  current: StepDraft[];
}
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  summary: fc.boolean(),
  turns: fc.array(turnArb, { maxLength: 30, size: 'max' }),
  current: fc.array(stepArb, { maxLength: 4 }),
});

function assemble(s: Scenario) {
  const window: MemoryWindow = {
    summary: s.summary ? { turnN: 1, block: { id: 'sum', seq: 1, ...compactionBlock(1, 'SUMMARY') } } : null,
    turns: s.turns.map((d, i) => build(d, i + 2)),
  };
  return assemblePrompt({
    portalFloor: 'Floor.',
    agent: {
      instructions: 'Author.',
      httpTools: [{ name: 'crm_lookup', description: 'CRM', parameters: {} }],
    },
    selectedSkills: [],
    catalogue: [],
    window,
    newMessage: { text: '/fact-check NEW', attachmentIds: [] },
    currentTurn: messages(TurnId('cur'), record('cur', s.current, false)),
    attachments: {},
    model: { contextWindow: 128_000, vision: null, reasoning: false },
    limits,
  }).messages;
}

const contentOf = (m: ChatMessage): string =>
  typeof m.content === 'string' ? m.content : m.content === null ? '' : JSON.stringify(m.content);

describe('memory over random transcripts', () => {
  const property = (check: (messages: ChatMessage[]) => void) =>
    fc.assert(
      fc.property(scenarioArb, (s) => check(assemble(s))),
      { numRuns: 300 },
    );

  it('answers every replayed call with the tool messages right after it, and has no stray tool message', () => {
    property((msgs) => {
      for (let i = 0; i < msgs.length; i++) {
        const m = msgs[i];
        if (m.role === 'assistant' && m.tool_calls) {
          const ids = m.tool_calls.map((c) => c.id);
          const next = msgs.slice(i + 1, i + 1 + ids.length);
          expect(next.map((t) => (t.role === 'tool' ? t.tool_call_id : `not a tool: ${t.role}`))).toEqual(
            ids,
          );
          i += ids.length;
        } else {
          expect(m.role).not.toBe('tool');
        }
      }
    });
  });

  it('never puts two user or two assistant entries next to each other', () => {
    property((msgs) => {
      for (let i = 1; i < msgs.length; i++) {
        const [a, b] = [msgs[i - 1].role, msgs[i].role];
        if (a === b) expect(['system', 'tool']).toContain(a);
      }
    });
  });

  it('never replays thinking, narration, /compact or the "Context summarised" line', () => {
    property((msgs) => {
      const all = msgs.map(contentOf).join('\n');
      expect(all).not.toMatch(/THINK_|NARR_|OPEN_COMPACT|Context summarised/);
    });
  });

  it('replays at most 20 past turns and at most 8 calls of each', () => {
    property((msgs) => {
      const calls = msgs.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
      const perTurn = new Map<string, number>();
      for (const c of calls) {
        const t = c.id.split('_')[0];
        perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
      }
      for (const [t, count] of perTurn) if (t !== 'cur') expect(count).toBeLessThanOrEqual(8);
      const all = msgs.map(contentOf).join('\n');
      const turnsSeen = new Set(
        [...all.matchAll(/(?:OPEN|ANSWER|STEER|INTERRUPTED)_t(\d+)/g)].map((m) => m[1]),
      );
      for (const t of perTurn.keys()) if (t !== 'cur') turnsSeen.add(t.slice(1));
      expect(turnsSeen.size).toBeLessThanOrEqual(20);
    });
  });

  it('replays only arguments that are valid JSON objects', () => {
    property((msgs) => {
      for (const m of msgs) {
        if (m.role !== 'assistant') continue;
        for (const c of m.tool_calls ?? []) {
          const parsed: unknown = JSON.parse(c.function.arguments);
          expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)).toBe(true);
        }
      }
    });
  });

  it('keeps the new message and the current turn whole', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const all = assemble(s).map(contentOf).join('\n');
        expect(all).not.toContain('/fact-check NEW');
        // A compaction inside the turn keeps only its tail (SPEC section 5.1).
        if (!s.current.some((step) => step.autoCompaction)) {
          expect(all).toContain('NEW');
          s.current.forEach((step, k) => {
            if (step.steer) expect(all).toContain(`STEER_cur_${k}`);
          });
        }
      }),
      { numRuns: 200 },
    );
  });
});
