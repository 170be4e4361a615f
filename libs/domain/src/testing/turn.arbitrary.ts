import fc from 'fast-check';
import type { TurnStatus, TurnTranscript } from '../turn.types';
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
  type BlockDraft,
  type MessageDraft,
} from './turn.builders';

type Gate = 'none' | 'approved' | 'denied' | 'clarified';
interface CallDraft {
  gate: Gate;
  outcome: 'ok' | 'error';
  /** Results come back in any order: sorted by this key. */
  order: number;
  /** Only read for the last, interrupted call of a cut-off, failed or running turn. */
  answered: boolean;
}
interface StepDraft {
  /** A steering message that arrived before this model call, and the answer text it interrupted. */
  steer: { text: string; interrupted: string | null } | null;
  autoCompaction: boolean;
  thinking: string | null;
  narration: string | null;
  calls: CallDraft[];
}

const words = fc.constantFrom(
  'Let me look.',
  'Checking the report.',
  'Q3 revenue was $4.2M.',
  'Xin chào',
  'ok',
  '…',
);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });

const callArb: fc.Arbitrary<CallDraft> = fc.record({
  gate: fc.constantFrom<Gate>('none', 'none', 'approved', 'denied', 'clarified'),
  outcome: fc.constantFrom<'ok' | 'error'>('ok', 'error'),
  order: fc.nat(),
  answered: fc.boolean(),
});

const stepArb = (minCalls: number): fc.Arbitrary<StepDraft> =>
  fc.record({
    steer: maybe(fc.record({ text: words, interrupted: maybe(words) })),
    autoCompaction: fc.nat(4).map((n) => n === 0),
    thinking: maybe(words),
    narration: maybe(words),
    calls: fc.array(callArb, { minLength: minCalls, maxLength: 3 }),
  });

/** Builds messages as the orchestrator records them: one assistant message per stretch between user messages. */
class Recorder {
  readonly messages: MessageDraft[];
  private current: BlockDraft[] = [];
  private nextCall = 1;

  constructor(opening: string) {
    this.messages = [user(text(opening))];
  }

  push(...blocks: BlockDraft[]): void {
    this.current.push(...blocks);
  }

  steer(s: NonNullable<StepDraft['steer']>): void {
    if (s.interrupted !== null) this.push(text(s.interrupted));
    this.flush();
    this.messages.push(user(steering(s.text)));
  }

  /** One model call: its blocks, its tool uses, then each call's request and result. */
  step(step: StepDraft, isFirst: boolean, mode: 'done' | 'interrupted' = 'done'): void {
    if (step.steer && !isFirst) this.steer(step.steer);
    if (step.autoCompaction) this.push(compaction({ trigger: 'AUTO', coversTurns: { from: 1, to: 4 } }));
    if (step.thinking !== null) this.push(thinking(step.thinking));
    if (step.narration !== null && step.calls.length > 0) this.push(narration(step.narration));
    const ids = step.calls.map((c) => ({ ...c, callId: `c${this.nextCall++}` }));
    for (const c of ids)
      this.push(toolUse(c.callId, c.gate === 'clarified' ? 'ask_clarification' : 'http_tool'));
    for (const c of [...ids].sort((a, b) => a.order - b.order)) {
      if (mode === 'interrupted' && !c.answered) continue;
      this.push(...answer(c.callId, c));
    }
  }

  finish(): MessageDraft[] {
    this.flush();
    return this.messages;
  }

  private flush(): void {
    if (this.current.length > 0) this.messages.push(assistant(...this.current));
    this.current = [];
  }
}

function answer(callId: string, c: CallDraft): BlockDraft[] {
  switch (c.gate) {
    case 'none':
      return [toolResult(callId, c.outcome)];
    case 'approved':
      return [approval(callId, true), toolResult(callId, c.outcome)];
    case 'denied':
      return [approval(callId, false), toolResult(callId, 'denied')];
    case 'clarified':
      return [clarification(callId, 'the second one'), toolResult(callId, 'ok', 'the second one')];
  }
}

export interface TurnArbOptions {
  /** Statuses to draw from; all six by default. */
  statuses?: readonly TurnStatus[];
  /** At least this many tool calls before the end of the turn (default 0). */
  minToolCalls?: number;
}

const ALL: readonly TurnStatus[] = ['queued', 'running', 'paused', 'completed', 'failed', 'cut_off'];

/**
 * Well-formed turns (`checkTurn` finds nothing): calls with results (some behind approvals or
 * clarifications), thinking, narration, steering, auto compactions, and an ending that fits the
 * status: answer text when completed, a pending request when paused, an interrupted call otherwise.
 * Includes manual compaction turns when `completed` is allowed and no tool calls are required.
 */
export function wellFormedTurnArb(options: TurnArbOptions = {}): fc.Arbitrary<TurnTranscript> {
  const minCalls = options.minToolCalls ?? 0;
  // A queued turn has no calls yet.
  const statuses = (options.statuses ?? ALL).filter((s) => minCalls === 0 || s !== 'queued');
  const turns = fc.record({
    status: fc.constantFrom(...statuses),
    opening: words,
    steps: fc.array(stepArb(0), { maxLength: 4 }),
    // The ending step: guarantees minToolCalls on its own, so any status can honour it.
    last: stepArb(minCalls),
    answer: words,
    pendingGate: fc.constantFrom<'approval' | 'clarification'>('approval', 'clarification'),
    partialText: maybe(words),
  });
  const regular = turns.map(({ status, opening, steps, last, answer, pendingGate, partialText }) => {
    const r = new Recorder(opening);
    if (status === 'queued') return makeTurn(status, r.finish());
    steps.forEach((s, i) => r.step(s, i === 0));
    const first = steps.length === 0;
    if (status === 'completed') {
      r.step(last, first);
      r.push(text(answer));
    } else if (status === 'paused') {
      r.step(last, first);
      const callId = 'c_pending';
      r.push(toolUse(callId, pendingGate === 'clarification' ? 'ask_clarification' : 'http_tool'));
      r.push(pendingGate === 'clarification' ? clarification(callId, null) : approval(callId, null));
    } else {
      r.step(last, first, 'interrupted');
      if (partialText !== null) r.push(text(partialText));
    }
    return makeTurn(status, r.finish());
  });
  if (!statuses.includes('completed') || minCalls > 0) return regular;
  const manual = fc.integer({ min: 1, max: 40 }).map((to) =>
    makeTurn(
      'completed',
      [
        user(text('/compact keep every figure')),
        assistant(
          compaction({
            trigger: 'MANUAL',
            summary: `Summary of turns 1–${to}`,
            coversTurns: { from: 1, to },
          }),
          text(`Context summarised: turns 1–${to}.`),
        ),
      ],
      { kind: 'compaction', n: to + 1 },
    ),
  );
  return fc.oneof({ arbitrary: regular, weight: 9 }, { arbitrary: manual, weight: 1 });
}
