import type { CompactionBlock, Message, TurnTranscript } from '@portal/domain';
import { parseLeadingSlugs } from '../skills.util';
import { textTokens } from '../tokens';
import type { CompactionPromptInput, PersonRequest } from './compaction.types';
import { quoteBlock } from './quote.util';

/** What a summary covers: the earlier summary, what came after it, and the person's requests. */

export interface Stretch {
  turnN: number;
  current: boolean;
  messages: Message[];
}

/** The messages after the last compaction block among them, and that block. */
function afterCompaction(messages: readonly Message[]): {
  messages: Message[];
  summary: CompactionBlock | null;
} {
  let summary: CompactionBlock | null = null;
  let at: [number, number] = [-1, -1];
  messages.forEach((m, i) =>
    m.blocks.forEach((b, j) => {
      if (b.kind === 'compaction') [summary, at] = [b, [i, j]];
    }),
  );
  if (!summary) return { messages: [...messages], summary: null };
  const out: Message[] = [];
  messages.forEach((m, i) => {
    if (i < at[0]) return;
    const blocks = i === at[0] ? m.blocks.slice(at[1] + 1) : m.blocks;
    if (blocks.length > 0) out.push({ ...m, blocks });
  });
  return { messages: out, summary };
}

export interface History {
  earlier: CompactionBlock | null;
  /** The first turn after the earlier summary (the turn holding an AUTO summary goes on after it). */
  firstTurnN: number;
  /** What came after the earlier summary, turn by turn, oldest first, the current turn last (AUTO only). */
  stretches: Stretch[];
  /** What the person wrote, message by message, oldest first: `people`, then the current turn's (AUTO). */
  people: PersonRequest[];
}

function stretchesOf(turns: readonly TurnTranscript[]): Stretch[] {
  return turns.map((t) => ({
    turnN: t.turn.n,
    current: false,
    messages: afterCompaction(t.messages).messages,
  }));
}

/** The earlier summary and what came after it. */
export function history(input: CompactionPromptInput): History {
  const { summary } = input.window;
  let earlier = summary?.block ?? null;
  let firstTurnN = !summary ? 1 : summary.block.trigger === 'AUTO' ? summary.turnN : summary.turnN + 1;
  let stretches = stretchesOf(input.window.turns);
  const people = input.people ? [...input.people] : stretches.flatMap(requestsIn);
  if (input.trigger === 'AUTO') {
    const after = afterCompaction(input.current.messages);
    if (after.summary) [earlier, firstTurnN, stretches] = [after.summary, input.current.n, []];
    stretches.push({ turnN: input.current.n, current: true, messages: after.messages });
    // Every request of the current turn, those before a summary in it too.
    people.push(...requestsIn({ turnN: input.current.n, messages: input.current.messages }));
  }
  return { earlier, firstTurnN, stretches: stretches.filter((s) => s.messages.length > 0), people };
}

function requestsIn(s: { turnN: number; messages: readonly Message[] }): PersonRequest[] {
  return s.messages
    .filter((m) => m.role === 'user')
    .map((m) => ({ turnN: s.turnN, messageId: m.id, text: personText(m) }));
}

/** The person's requests in `turns` (after any summary inside a turn), oldest first. */
export function personRequests(turns: readonly TurnTranscript[]): PersonRequest[] {
  return stretchesOf(turns).flatMap(requestsIn);
}

export function isSteering(message: Message): boolean {
  return message.blocks.some((b) => b.kind === 'text' && b.steering);
}

export function messageText(message: Message): string {
  return message.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
}

/** Kept by message: the worker builds the prompt again after every page of history it reads. */
const personTexts = new WeakMap<Message, string>();

/** A user message as the model read it: the opening one without its leading slugs, steering as typed. */
export function personText(message: Message): string {
  let text = personTexts.get(message);
  if (text === undefined) {
    text = requestText(messageText(message), isSteering(message));
    personTexts.set(message, text);
  }
  return text;
}

function requestText(typed: string, steering: boolean): string {
  return (steering ? typed : parseLeadingSlugs(typed).rest).trim();
}

/**
 * A person's message as the request the summary keeps: its text as the model read it, and the
 * tokens of that text as "Requests to keep" quotes it. Stored with the message, so a compaction
 * reads a long conversation's requests without counting them again. The count leaves out the
 * entry's `Turn N:` line: the tokenizer's pieces never span the line break before the quote, so
 * an entry's tokens are the two counts added (the turn's number is not known before it is stored).
 */
export function personRequest(typed: string, steering: boolean): { text: string; tokens: number } {
  const text = requestText(typed, steering);
  return { text, tokens: textTokens(quoteBlock(text)) };
}
