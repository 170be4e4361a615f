import type { Block, Message, RequestBlock, ToolUseBlock } from '@portal/domain';
import type { ModelToolCall } from '@portal/model';

/**
 * What a running turn does next, read from its stored transcript alone, so that a worker that
 * takes over a turn (after a crash, a shutdown or a pause) goes on exactly where it stopped:
 * - `answer`: a request the person answered, whose call has no result yet;
 * - `pending`: a request still waiting (a running turn should not have one);
 * - `tool`: the oldest call without a result or a request;
 * - `done`: the last message is the assistant's and ends with answer text, so no steering
 *   message came after the answer;
 * - `call`: anything else: the model speaks next.
 */
export type Step =
  | { kind: 'answer'; request: RequestBlock; use: ToolUseBlock }
  | { kind: 'pending'; request: RequestBlock }
  | { kind: 'tool'; use: ToolUseBlock }
  | { kind: 'done' }
  | { kind: 'call' };

export function nextStep(messages: readonly Message[]): Step {
  const blocks = messages.flatMap((m) => (m.role === 'assistant' ? m.blocks : []));
  const answered = new Set(blocks.flatMap((b) => (b.kind === 'tool_result' ? [b.callId] : [])));
  for (const use of blocks) {
    if (use.kind !== 'tool_use' || answered.has(use.callId)) continue;
    const request = blocks.find(
      (b): b is RequestBlock =>
        (b.kind === 'clarification_request' || b.kind === 'approval_request') && b.callId === use.callId,
    );
    if (!request) return { kind: 'tool', use };
    const pending =
      request.kind === 'clarification_request' ? request.answer === null : request.approved === null;
    return pending ? { kind: 'pending', request } : { kind: 'answer', request, use };
  }
  const last = messages.at(-1);
  const end = last?.role === 'assistant' ? last.blocks.at(-1) : undefined;
  return end?.kind === 'text' && !end.narration ? { kind: 'done' } : { kind: 'call' };
}

const CALL_OUTPUT: ReadonlySet<Block['kind']> = new Set(['thinking', 'text', 'tool_use']);

/**
 * Model calls the turn has recorded: each call's output is a run of thinking, text and tool-use
 * blocks in an assistant message, and tool results or requests always stand between two calls.
 */
export function countCalls(messages: readonly Message[]): number {
  let calls = 0;
  for (const m of messages) {
    if (m.role !== 'assistant') continue;
    let inRun = false;
    for (const b of m.blocks) {
      const output = CALL_OUTPUT.has(b.kind);
      if (output && !inRun) calls += 1;
      inRun = output;
    }
  }
  return calls;
}

export type BlockDraft = Block extends infer B ? (B extends unknown ? Omit<B, 'seq'> : never) : never;

/** Block ids handed out while the call streams, so `block_started` and the stored block agree. */
export interface CallBlockIds {
  thinking: string;
  text: string;
  toolUse: (index: number) => string;
}

/**
 * The blocks one call leaves: its thinking, its text (narration when the call also used tools),
 * one tool use per call. A call that wrote neither text nor a tool call never gets here
 * (`EmptyReplyError`): nothing is made up to end a turn on text. Call ids already used in the turn get a suffix (some providers number calls per
 * response), so a result always answers exactly one call. A call cut off while it streamed keeps
 * its thinking and text as they stood, and no tool use (its arguments may be cut).
 */
export function callBlocks(
  output: { thinking: string; text: string; toolCalls: readonly ModelToolCall[] },
  ids: CallBlockIds,
  opts: { usedCallIds: ReadonlySet<string>; partial?: boolean },
): BlockDraft[] {
  const blocks: BlockDraft[] = [];
  if (output.thinking !== '') blocks.push({ id: ids.thinking, kind: 'thinking', text: output.thinking });
  const narration = output.toolCalls.length > 0;
  if (output.text !== '') {
    blocks.push({ id: ids.text, kind: 'text', text: output.text, narration, steering: false });
  }
  if (opts.partial) return blocks;
  const used = new Set(opts.usedCallIds);
  output.toolCalls.forEach((call, i) => {
    let callId = call.callId;
    for (let n = 2; used.has(callId); n++) callId = `${call.callId}_${n}`;
    used.add(callId);
    blocks.push({ id: ids.toolUse(i), kind: 'tool_use', callId, name: call.name, arguments: call.arguments });
  });
  return blocks;
}

/** Call ids the turn has used so far. */
export function usedCallIds(messages: readonly Message[]): Set<string> {
  return new Set(messages.flatMap((m) => m.blocks.flatMap((b) => (b.kind === 'tool_use' ? [b.callId] : []))));
}
