import { isPendingRequest, type Block, type CompactionBlock } from './block.types';
import { DomainError } from './domain-error';
import type { Message, TurnTranscript } from './turn.types';

/** SPEC section 8. Order within a turn is the recorded order: messages as listed, blocks as listed. */
export const INVARIANT_CODES = {
  terminal_block_not_text: 1,
  tool_result_without_use: 2,
  tool_result_duplicate: 2,
  tool_result_before_use: 2,
  tool_use_duplicate: 2,
  tool_use_unanswered: 3,
  block_in_wrong_role: 4,
  request_not_last: 5,
  paused_without_request: 5,
  request_pending_not_paused: 5,
  compaction_invalid: 6,
} as const;
export type InvariantCode = keyof typeof INVARIANT_CODES;
export type InvariantNumber = (typeof INVARIANT_CODES)[InvariantCode];

export interface InvariantViolation {
  invariant: InvariantNumber;
  code: InvariantCode;
  message: string;
  blockId?: string;
}

function violation(code: InvariantCode, message: string, blockId?: string): InvariantViolation {
  return blockId === undefined
    ? { invariant: INVARIANT_CODES[code], code, message }
    : { invariant: INVARIANT_CODES[code], code, message, blockId };
}

function turnBlocks(transcript: TurnTranscript): Block[] {
  return transcript.messages.flatMap((m) => m.blocks);
}

/** 1. A completed turn ends with an assistant message whose last block is answer text (not narration). */
export function checkTerminalText(transcript: TurnTranscript): InvariantViolation[] {
  if (transcript.turn.status !== 'completed') return [];
  const last = transcript.messages.at(-1);
  // A trailing user message is steering the turn never read (SPEC section 2).
  if (!last || last.role !== 'assistant') {
    return [violation('terminal_block_not_text', 'A completed turn must end with an assistant message')];
  }
  const block = last.blocks.at(-1);
  if (!block) return [violation('terminal_block_not_text', 'The last assistant message is empty')];
  if (block.kind !== 'text') {
    return [
      violation('terminal_block_not_text', `A ${block.kind} block cannot end a completed turn`, block.id),
    ];
  }
  if (block.narration) {
    return [violation('terminal_block_not_text', 'Narration cannot end a completed turn', block.id)];
  }
  return [];
}

/** 2. A tool result answers exactly one earlier tool use of the turn; a tool use has at most one result. */
export function checkToolResults(transcript: TurnTranscript): InvariantViolation[] {
  const blocks = turnBlocks(transcript);
  const allUses = new Set(blocks.flatMap((b) => (b.kind === 'tool_use' ? [b.callId] : [])));
  const usesSoFar = new Set<string>();
  const answered = new Set<string>();
  const out: InvariantViolation[] = [];
  for (const b of blocks) {
    if (b.kind === 'tool_use') {
      if (usesSoFar.has(b.callId)) {
        out.push(
          violation('tool_use_duplicate', `Call id ${b.callId} is used by more than one tool use`, b.id),
        );
      }
      usesSoFar.add(b.callId);
    } else if (b.kind === 'tool_result') {
      if (!allUses.has(b.callId)) {
        out.push(violation('tool_result_without_use', `No tool use has call id ${b.callId}`, b.id));
      } else if (!usesSoFar.has(b.callId)) {
        out.push(
          violation('tool_result_before_use', `The result of ${b.callId} comes before its tool use`, b.id),
        );
      } else if (answered.has(b.callId)) {
        out.push(violation('tool_result_duplicate', `Call ${b.callId} already has a result`, b.id));
      }
      answered.add(b.callId);
    }
  }
  return out;
}

/**
 * 3. A completed turn has no tool use without a result. A denied approval is answered by its `denied`
 * result like any other call. Cut-off and failed turns may leave calls open; memory answers them.
 */
export function checkToolUsesAnswered(transcript: TurnTranscript): InvariantViolation[] {
  if (transcript.turn.status !== 'completed') return [];
  const blocks = turnBlocks(transcript);
  const results = new Set(blocks.flatMap((b) => (b.kind === 'tool_result' ? [b.callId] : [])));
  return blocks.flatMap((b) =>
    b.kind === 'tool_use' && !results.has(b.callId)
      ? [violation('tool_use_unanswered', `Call ${b.callId} has no result`, b.id)]
      : [],
  );
}

/** 4. User messages hold only the person's text; assistant messages hold everything else, never steering. */
export function checkBlockRoles(transcript: TurnTranscript): InvariantViolation[] {
  const out: InvariantViolation[] = [];
  for (const m of transcript.messages) {
    for (const b of m.blocks) {
      if (m.role === 'user' && b.kind !== 'text') {
        out.push(violation('block_in_wrong_role', `A ${b.kind} block cannot be in a user message`, b.id));
      } else if (m.role === 'user' && b.kind === 'text' && b.narration) {
        out.push(violation('block_in_wrong_role', 'Narration cannot be in a user message', b.id));
      } else if (m.role === 'assistant' && b.kind === 'text' && b.steering) {
        out.push(violation('block_in_wrong_role', 'Steering text cannot be in an assistant message', b.id));
      }
    }
  }
  return out;
}

/** 5, placement only: a pending request is the last block of its message and of the turn. */
export function checkRequestPlacement(transcript: TurnTranscript): InvariantViolation[] {
  const lastOfTurn = turnBlocks(transcript).at(-1);
  const out: InvariantViolation[] = [];
  for (const m of transcript.messages) {
    m.blocks.forEach((b, i) => {
      if (isPendingRequest(b) && (i !== m.blocks.length - 1 || b !== lastOfTurn)) {
        out.push(violation('request_not_last', `Pending ${b.kind} must be the last block of the turn`, b.id));
      }
    });
  }
  return out;
}

/** 5. Placement, and the turn is `paused` exactly while a request is pending. */
export function checkPendingRequests(transcript: TurnTranscript): InvariantViolation[] {
  const out = checkRequestPlacement(transcript);
  const pending = turnBlocks(transcript).filter(isPendingRequest);
  const status = transcript.turn.status;
  if (status === 'paused' && pending.length === 0) {
    out.push(violation('paused_without_request', 'A paused turn has no pending request'));
  }
  if (status !== 'paused') {
    for (const b of pending) {
      out.push(violation('request_pending_not_paused', `A ${status} turn has a pending ${b.kind}`, b.id));
    }
  }
  return out;
}

/** 6, one block: a non-empty summary, a trigger, and turns covered from 1. */
export function checkCompaction(block: CompactionBlock): InvariantViolation[] {
  const reasons: string[] = [];
  if (typeof block.summary !== 'string' || block.summary.trim() === '') reasons.push('the summary is empty');
  if (block.trigger !== 'AUTO' && block.trigger !== 'MANUAL')
    reasons.push(`trigger ${String(block.trigger)}`);
  // Stored data may lack fields the type promises.
  const from = block.coversTurns?.from;
  const to = block.coversTurns?.to;
  if (from !== 1) reasons.push(`covered turns start at ${from}, not 1`);
  if (!Number.isInteger(to) || to < from) reasons.push(`covered turns end at ${to}`);
  return reasons.length === 0
    ? []
    : [violation('compaction_invalid', `Invalid compaction: ${reasons.join('; ')}`, block.id)];
}

/** 6. Every compaction block of the turn. */
export function checkCompactions(transcript: TurnTranscript): InvariantViolation[] {
  return turnBlocks(transcript).flatMap((b) => (b.kind === 'compaction' ? checkCompaction(b) : []));
}

/** All six invariants, in order. Run it whenever a turn changes status (pause, resume, settle). */
export function checkTurn(transcript: TurnTranscript): InvariantViolation[] {
  return [
    ...checkTerminalText(transcript),
    ...checkToolResults(transcript),
    ...checkToolUsesAnswered(transcript),
    ...checkBlockRoles(transcript),
    ...checkPendingRequests(transcript),
    ...checkCompactions(transcript),
  ];
}

/**
 * The transcript with `block` appended to `message`: to the message of the same id when the
 * transcript has it, else to `message` added as the newest message.
 */
export function appendBlock(transcript: TurnTranscript, message: Message, block: Block): TurnTranscript {
  const known = transcript.messages.some((m) => m.id === message.id);
  const messages = known
    ? transcript.messages.map((m) => (m.id === message.id ? { ...m, blocks: [...m.blocks, block] } : m))
    : [...transcript.messages, { ...message, blocks: [...message.blocks, block] }];
  return { ...transcript, messages };
}

/**
 * Invariants 2, 4, 5 (placement) and 6 for appending `block` to `message` of an open turn. The rules
 * that need the turn settled (1, 3 and the paused status of 5) are left to `checkTurn` at the transition.
 */
export function checkAppend(
  transcript: TurnTranscript,
  message: Message,
  block: Block,
): InvariantViolation[] {
  const next = appendBlock(transcript, message, block);
  return [
    ...checkToolResults(next),
    ...checkBlockRoles(next),
    ...checkRequestPlacement(next),
    ...(block.kind === 'compaction' ? checkCompaction(block) : []),
  ];
}

function raise(violations: InvariantViolation[], transcript: TurnTranscript): void {
  if (violations.length === 0) return;
  throw new DomainError(
    'invariant_violated',
    `Turn ${transcript.turn.id}: ${violations.map((v) => v.message).join('; ')}`,
    { turnId: transcript.turn.id, violations },
  );
}

/** Throws DomainError('invariant_violated', { violations }) when `checkTurn` finds any. */
export function assertInvariants(transcript: TurnTranscript): void {
  raise(checkTurn(transcript), transcript);
}

/** Throws DomainError('invariant_violated', { violations }) when `checkAppend` finds any. */
export function assertAppend(transcript: TurnTranscript, message: Message, block: Block): void {
  raise(checkAppend(transcript, message, block), transcript);
}
