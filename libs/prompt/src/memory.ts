import type {
  CompactionBlock,
  Message,
  MemoryWindow,
  ToolOutcome,
  ToolResultBlock,
  ToolUseBlock,
  TurnTranscript,
} from '@portal/domain';
import type { UserSegment } from './attachments';
import type { ChatToolCall } from './chat.types';
import type { Limits } from './limits';
import { parseLeadingSlugs } from './skills.util';
import { charCount, cutText } from './text-cut';

/** SPEC section 4: short-term memory, rebuilt from the transcript on every call. */

/** Layer 5 is memory; layer 6 is the new message and the turn so far. */
export type EntryLayer = 'memory' | 'new_message';

/** One chat message before rendering: user entries keep their attachments until the plan is known. */
export type Entry =
  | { role: 'user'; segments: UserSegment[]; layer: EntryLayer }
  | { role: 'assistant'; text: string; calls: ChatToolCall[]; layer: EntryLayer }
  | { role: 'tool'; callId: string; content: string; layer: EntryLayer };

// --- The summary ---------------------------------------------------------------------------------

/** The note a summary is replayed under (the compaction prompt names the old summary by it). */
export function summaryNote(block: CompactionBlock): string {
  return `[Summary of earlier conversation — turns ${block.coversTurns.from}–${block.coversTurns.to}]`;
}

/** The newest summary as one user entry headed by its note; the model reads it with its refs. */
export function summaryEntry(block: CompactionBlock, layer: EntryLayer = 'memory'): Entry {
  return {
    role: 'user',
    segments: [{ text: `${summaryNote(block)}\n\n${block.summary}`, attachmentIds: [], fresh: false }],
    layer,
  };
}

// --- Which turns and calls ---------------------------------------------------------------------

/**
 * The past turns replayed: the last TURNS_REPLAYED after the summary, oldest first. A compaction
 * turn replays nothing: its `/compact` is a command and its "Context summarised" line is the
 * portal's, not the agent's.
 */
export function replayedTurns(turns: readonly TurnTranscript[], limits: Limits): TurnTranscript[] {
  const regular = turns.filter((t) => t.turn.kind !== 'compaction');
  return limits.TURNS_REPLAYED === 0 ? [] : regular.slice(-limits.TURNS_REPLAYED);
}

/** Of a turn's calls, the last CALLS_PER_TURN hold their place; the rest are counted. */
export function shownCalls(
  callIds: readonly string[],
  limits: Limits,
): { shown: Set<string>; hidden: number } {
  const hidden = Math.max(0, callIds.length - limits.CALLS_PER_TURN);
  return { shown: new Set(callIds.slice(hidden)), hidden };
}

export function hiddenCallsNote(hidden: number): string {
  return `[${hidden} earlier tool call${hidden === 1 ? '' : 's'} of this turn not shown]`;
}

// --- Arguments ---------------------------------------------------------------------------------

export function cutString(text: string, max: number): string {
  const kept = cutText(text, max);
  return `${kept}… [cut: ${charCount(text) - charCount(kept)} more characters]`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Arguments as replayed: always a valid JSON object. Malformed JSON (or JSON that is not an object)
 * becomes an object describing that. With `maxStringChars`, strings longer than it are cut inside
 * the JSON and say so; arguments with nothing to cut are replayed exactly as sent.
 */
export function replayArguments(raw: string, maxStringChars: number | null): string {
  if (raw.trim() === '') return '{}';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  const cut = (s: string) =>
    maxStringChars !== null && charCount(s) > maxStringChars ? cutString(s, maxStringChars) : s;
  if (!isObject(parsed)) {
    return JSON.stringify({
      unparsed_arguments: cut(raw),
      note: 'The arguments sent were not a valid JSON object.',
    });
  }
  if (maxStringChars === null) return raw;
  let changed = false;
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const out = cut(value);
      changed ||= out !== value;
      return out;
    }
    if (Array.isArray(value)) return value.map(walk);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    return value;
  };
  const replayed = walk(parsed);
  return changed ? JSON.stringify(replayed) : raw;
}

// --- Results -----------------------------------------------------------------------------------

function outcomePrefix(outcome: ToolOutcome): string {
  return outcome === 'ok' ? '' : `[outcome: ${outcome}] `;
}

/** A result cut to RESULT_PREVIEW_CHARS plus its reference; one that fits crosses whole, without one. */
export function previewResult(result: ToolResultBlock, limits: Limits): string {
  const max = limits.RESULT_PREVIEW_CHARS;
  if (charCount(result.content) <= max) return outcomePrefix(result.outcome) + result.content;
  const where = result.ref === null ? 'the whole result is not stored' : `whole result: ref:${result.ref}`;
  return `${outcomePrefix(result.outcome)}${cutText(result.content, max)} … [cut; ${where}]`;
}

/** Older turns keep only the outcome: the result and any failure message are gone. */
export function outcomeOnly(outcome: ToolOutcome | 'never returned'): string {
  return `[result not replayed; outcome: ${outcome}]`;
}

/** The answer a call that never returned gets, so no replayed call is left unanswered. */
export const NEVER_RETURNED = '[no result; outcome: never returned]';

/** A past call's tool entry at distance `d` (1 = the previous turn). */
export function replayResult(result: ToolResultBlock | undefined, d: number, limits: Limits): string {
  if (d > limits.TOOL_OUTPUT_TURNS) return outcomeOnly(result?.outcome ?? 'never returned');
  return result ? previewResult(result, limits) : NEVER_RETURNED;
}

/** The current turn's own calls read their results whole. */
export function wholeResult(result: ToolResultBlock | undefined): string {
  return result ? outcomePrefix(result.outcome) + result.content : NEVER_RETURNED;
}

// --- Turns -------------------------------------------------------------------------------------

/** What of a turn can enter memory, in recorded order. Thinking and narration never do. */
type Item =
  | { kind: 'user'; message: Message }
  | { kind: 'prose'; text: string }
  | { kind: 'call'; block: ToolUseBlock }
  | { kind: 'result' }
  | { kind: 'compaction'; block: CompactionBlock };

function turnItems(messages: readonly Message[]): Item[] {
  const items: Item[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      items.push({ kind: 'user', message: m });
      continue;
    }
    for (const b of m.blocks) {
      if (b.kind === 'text' && !b.narration && b.text !== '') items.push({ kind: 'prose', text: b.text });
      else if (b.kind === 'tool_use') items.push({ kind: 'call', block: b });
      else if (b.kind === 'tool_result') items.push({ kind: 'result' });
      else if (b.kind === 'compaction') items.push({ kind: 'compaction', block: b });
    }
  }
  return items;
}

function resultsByCall(messages: readonly Message[]): Map<string, ToolResultBlock> {
  const results = new Map<string, ToolResultBlock>();
  for (const m of messages) {
    for (const b of m.blocks)
      if (b.kind === 'tool_result' && !results.has(b.callId)) results.set(b.callId, b);
  }
  return results;
}

/** A user message as the model read it: the opening one without its leading slugs, steering as typed. */
function userSegment(message: Message, fresh: boolean): UserSegment {
  const text = message.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
  const steering = message.blocks.some((b) => b.kind === 'text' && b.steering);
  return {
    text: steering ? text : parseLeadingSlugs(text).rest,
    attachmentIds: message.attachmentIds,
    fresh,
  };
}

interface ReplayMode {
  layer: EntryLayer;
  fresh: boolean;
  /** Past turns cut strings in arguments; the current turn does not. */
  maxArgChars: number | null;
  result: (result: ToolResultBlock | undefined) => string;
  /** The calls shown and how many earlier ones are not. */
  calls: (callIds: string[]) => { shown: Set<string>; hidden: number };
}

/**
 * Items to entries in recorded order: each run of calls as one assistant entry with its tool
 * entries right after it (the API refuses a call without its answer), prose where it was written,
 * user messages where they arrived.
 */
function itemEntries(
  items: readonly Item[],
  results: Map<string, ToolResultBlock>,
  mode: ReplayMode,
): Entry[] {
  const callIds = items.flatMap((i) => (i.kind === 'call' ? [i.block.callId] : []));
  const { shown, hidden } = mode.calls(callIds);
  let note = hidden > 0 ? hiddenCallsNote(hidden) : null;
  const out: Entry[] = [];
  let run: ToolUseBlock[] = [];
  const flush = () => {
    if (run.length === 0) return;
    const calls = run.map((u): ChatToolCall => ({
      id: u.callId,
      type: 'function',
      function: { name: u.name, arguments: replayArguments(u.arguments, mode.maxArgChars) },
    }));
    out.push({ role: 'assistant', text: note ?? '', calls, layer: mode.layer });
    note = null;
    for (const u of run)
      out.push({
        role: 'tool',
        callId: u.callId,
        content: mode.result(results.get(u.callId)),
        layer: mode.layer,
      });
    run = [];
  };
  for (const item of items) {
    if (item.kind === 'call') {
      if (shown.has(item.block.callId)) run.push(item.block);
      continue;
    }
    flush();
    if (item.kind === 'user')
      out.push({ role: 'user', segments: [userSegment(item.message, mode.fresh)], layer: mode.layer });
    else if (item.kind === 'prose')
      out.push({ role: 'assistant', text: item.text, calls: [], layer: mode.layer });
  }
  flush();
  if (note !== null) out.push({ role: 'assistant', text: note, calls: [], layer: mode.layer });
  return out;
}

/** Blocks after the turn's last compaction: a compaction replaces everything before it. */
function afterLastCompaction(items: Item[]): Item[] {
  const at = items.map((i) => i.kind).lastIndexOf('compaction');
  return at < 0 ? items : items.slice(at + 1);
}

/**
 * One past turn at distance `d` (1 = the previous turn): the person's text and attachments, the
 * calls and results (last CALLS_PER_TURN, output only for d ≤ TOOL_OUTPUT_TURNS), the answer.
 * A cut-off turn replays the same way: what it wrote and the calls it ran, each call answered.
 */
export function pastTurnEntries(turn: TurnTranscript, d: number, limits: Limits): Entry[] {
  return itemEntries(afterLastCompaction(turnItems(turn.messages)), resultsByCall(turn.messages), {
    layer: 'memory',
    fresh: false,
    maxArgChars: limits.ARG_STRING_CHARS,
    result: (r) => replayResult(r, d, limits),
    calls: (ids) => shownCalls(ids, limits),
  });
}

/** Layer 5: the newest summary, then the replayed past turns oldest first. */
export function memoryEntries(window: MemoryWindow, limits: Limits): Entry[] {
  const turns = replayedTurns(window.turns, limits);
  const entries = window.summary ? [summaryEntry(window.summary.block)] : [];
  turns.forEach((t, i) => entries.push(...pastTurnEntries(t, turns.length - i, limits)));
  return mergeAdjacent(entries);
}

/** Two adjacent prose entries never share a role; an entry carrying a tool's answer is never merged into. */
export function mergeAdjacent(entries: readonly Entry[]): Entry[] {
  const out: Entry[] = [];
  for (const e of entries) {
    const last = out.at(-1);
    if (last?.role === 'user' && e.role === 'user') {
      out[out.length - 1] = { ...last, segments: [...last.segments, ...e.segments] };
    } else if (last?.role === 'assistant' && e.role === 'assistant' && last.calls.length === 0) {
      out[out.length - 1] = {
        ...last,
        text: [last.text, e.text].filter((t) => t !== '').join('\n\n'),
        calls: e.calls,
      };
    } else {
      out.push(e);
    }
  }
  return out;
}

/**
 * After an auto compaction the turn goes on from the summary and the last TAIL_MESSAGES of the
 * turn's own messages, the start moved back so the tail never opens on a tool result (SPEC 5.1).
 */
export function compactionTail(entries: readonly Entry[], limits: Limits): Entry[] {
  let start = Math.max(0, entries.length - limits.TAIL_MESSAGES);
  while (start > 0 && entries[start].role === 'tool') start -= 1;
  return entries.slice(start);
}

export interface NewMessage {
  /** As typed; the leading slugs are removed here. */
  text: string;
  attachmentIds: readonly string[];
}

/** The user messages among `entries`, in order: the ones the attachment plan reads. */
export function userSegments(entries: readonly Entry[]): UserSegment[] {
  return entries.flatMap((e) => (e.role === 'user' ? e.segments : []));
}

/**
 * Layers 5 and 6 as entries: memory, the new message (none for a preview), then the current turn in the order it
 * happened: its calls and results whole, steering where it arrived, answer text that steering
 * interrupted. Narration and thinking are left out here too. A compaction inside the current turn
 * replaces memory and the turn before it: its summary, then the tail of the turn's messages before
 * it (the new message included), then what followed.
 */
export function conversationEntries(
  window: MemoryWindow,
  newMessage: NewMessage | null,
  currentTurn: readonly Message[],
  limits: Limits,
): Entry[] {
  const opening: Entry[] = newMessage
    ? [
        {
          role: 'user',
          segments: [
            {
              text: parseLeadingSlugs(newMessage.text).rest,
              attachmentIds: newMessage.attachmentIds,
              fresh: true,
            },
          ],
          layer: 'new_message',
        },
      ]
    : [];
  const results = resultsByCall(currentTurn);
  const mode: ReplayMode = {
    layer: 'new_message',
    fresh: true,
    maxArgChars: null,
    result: wholeResult,
    calls: (ids) => ({ shown: new Set(ids), hidden: 0 }),
  };
  const items = turnItems(currentTurn);
  const at = items.map((i) => i.kind).lastIndexOf('compaction');
  if (at < 0)
    return mergeAdjacent([
      ...memoryEntries(window, limits),
      ...opening,
      ...itemEntries(items, results, mode),
    ]);
  const before = mergeAdjacent([...opening, ...itemEntries(items.slice(0, at), results, mode)]);
  const { block } = items[at] as Extract<Item, { kind: 'compaction' }>;
  return mergeAdjacent([
    summaryEntry(block),
    ...compactionTail(before, limits),
    ...itemEntries(items.slice(at + 1), results, mode),
  ]);
}
