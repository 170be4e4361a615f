import type {
  Block,
  CompactionBlock,
  CompactionTrigger,
  MemoryWindow,
  Message,
  ToolResultBlock,
  TurnTranscript,
} from '@portal/domain';
import type { ChatRequest } from './chat.types';
import type { Limits } from './limits';
import { replayArguments, summaryNote } from './memory';
import { cutText } from './text-cut';
import { parseLeadingSlugs } from './skills.util';
import { projectTokens, sharedTokenCounter, textTokens, type TokenCounter } from './tokens';

/** SPEC section 5.2: the summary prompt, the same for both triggers, and the checks on its answer. */

/** The summary's sections, in order, with their English headings. */
export const SUMMARY_SECTIONS = ['Requests', 'Decisions', 'Work done', 'Open work', 'Facts'] as const;

/** The line every summary opens with: the turns it covers, always from turn 1. */
export function summaryHeading(to: number): string {
  return `Summary of turns 1–${to}`;
}

/** The turns a compaction covers: up to the running turn (AUTO), or up to the one before the `/compact` turn. */
export function coveredTurns(trigger: CompactionTrigger, turnN: number): { from: 1; to: number } {
  return { from: 1, to: trigger === 'AUTO' ? turnN : Math.max(1, turnN - 1) };
}

/**
 * The tokens a summary prompt may take (SPEC 5.2): the context window less SUMMARY_OUTPUT_SHARE
 * kept for the answer.
 */
export function summaryPromptBudget(contextWindow: number, limits: Limits): number {
  return Math.floor((1 - limits.SUMMARY_OUTPUT_SHARE) * contextWindow);
}

export interface TurnRange {
  from: number;
  to: number;
}

export interface CompactionPromptInput {
  /**
   * The newest summary before the current turn and the settled turns after it, oldest first: every
   * one, or the newest ones read backwards until `turnsLeftOut` says some of them did not fit.
   */
  window: MemoryWindow;
  /**
   * The person's requests in the settled turns from turn 1, oldest first: every one, or the newest
   * ones read backwards until `requestsLeftOut` says some did not fit (how the worker reads them
   * stored). The summary keeps them all within their share; an earlier summary's own requests are
   * superseded by them. Default: the requests in the turns shown (`window.turns`).
   */
  people?: readonly PersonRequest[];
  /** The turn the compaction happens in: the running turn so far (AUTO) or the `/compact` turn (MANUAL). */
  current: { n: number; messages: readonly Message[] };
  trigger: CompactionTrigger;
  /** The agent's `compactionGuidance`. */
  guidance?: string | null;
  /** Of the turn's model. */
  contextWindow: number;
  limits: Limits;
  counter?: TokenCounter;
}

/** A message of the person as a request the summary keeps (see `personRequest`). */
export interface PersonRequest {
  turnN: number;
  messageId: string;
  /** The text as the model read it (leading `/slug` tokens removed); '' when it asks nothing. */
  text: string;
  /** `personRequest`'s count of the text as quoted, when it was stored with it; else counted here. */
  tokens?: number;
}

/** A request of the person as the summary must keep it. */
export interface QuotedRequest {
  turnN: number;
  messageId: string;
  /** The text as the model read it (leading `/slug` tokens removed). */
  text: string;
  /** What the summary must contain: the text, or past the requests share, its start and a reference. */
  quoted: string;
  shortened: boolean;
}

export interface CompactionPrompt extends ChatRequest {
  coversTurns: { from: 1; to: number };
  /** `Summary of turns 1–N`. */
  heading: string;
  /** Every request from turn 1 that fits the requests share, oldest first. */
  requests: QuotedRequest[];
  /** The turns of the oldest requests, past the requests share even as references; or null. */
  requestsLeftOut: TurnRange | null;
  /** The oldest turns since the earlier summary, past the prompt's budget: only their requests are kept; or null. */
  turnsLeftOut: TurnRange | null;
  /** The paragraphs quoted to pick the summary's language, oldest first. */
  languageSample: string[];
  /** The summary the history opens with, carried whole into the new one. */
  earlierSummary: CompactionBlock | null;
  /** What follows `/compact`, when the person gave instructions. */
  instructions: string | null;
}

// --- What the summary covers -------------------------------------------------------------------

interface Stretch {
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

interface History {
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
function history(input: CompactionPromptInput): History {
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

function isSteering(message: Message): boolean {
  return message.blocks.some((b) => b.kind === 'text' && b.steering);
}

function messageText(message: Message): string {
  return message.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
}

/** Kept by message: the worker builds the prompt again after every page of history it reads. */
const personTexts = new WeakMap<Message, string>();

/** A user message as the model read it: the opening one without its leading slugs, steering as typed. */
function personText(message: Message): string {
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

// --- Requests ----------------------------------------------------------------------------------

function requestRef(r: Pick<QuotedRequest, 'turnN' | 'messageId'>): string {
  return `[shortened; whole request: turn ${r.turnN}, message ${r.messageId}]`;
}

/**
 * The requests from turn 1 that fit SUMMARY_REQUESTS_SHARE of the context window (in
 * tokens), oldest first. Newest first, requests are kept whole while they fit; from the first one
 * that does not, every older one is shortened with a reference to its message (to the reference
 * alone when even the shortened form does not fit); from the first whose reference does not fit,
 * it and every older one are left out (the prompt names their turns in one line), so the section
 * stays within its share however long the conversation.
 */
export function quoteRequests(
  requests: readonly PersonRequest[],
  contextWindow: number,
  limits: Limits,
  counter: TokenCounter = sharedTokenCounter,
): QuotedRequest[] {
  return quote(requests, requestsShare(contextWindow, limits), limits, counter).requests;
}

/** quoteRequests within `share` tokens, with the tokens of the share left. */
function quote(
  requests: readonly PersonRequest[],
  share: number,
  limits: Limits,
  counter: TokenCounter,
): { requests: QuotedRequest[]; shareLeft: number } {
  let left = share;
  let shortening = false;
  const out: QuotedRequest[] = [];
  // Each request is measured as its entry in the prompt, which is what the section is made of.
  const cost = (r: PersonRequest, quoted: string) => counter.count(requestEntry(r.turnN, quoted));
  for (let i = requests.length - 1; i >= 0; i--) {
    const r = requests[i];
    const whole = r.tokens === undefined ? cost(r, r.text) : turnLineTokens(r.turnN) + r.tokens;
    if (!shortening && whole <= left) {
      left -= whole;
      out.push({ turnN: r.turnN, messageId: r.messageId, text: r.text, quoted: r.text, shortened: false });
      continue;
    }
    shortening = true;
    const start = cutText(r.text, limits.SHORTENED_REQUEST_CHARS).trim();
    const short = `${start} … ${requestRef(r)}`;
    const quoted = cost(r, short) <= left ? short : requestRef(r);
    const tokens = cost(r, quoted);
    if (tokens > left) break;
    left -= tokens;
    out.push({ turnN: r.turnN, messageId: r.messageId, text: r.text, quoted, shortened: true });
  }
  return { requests: out.reverse(), shareLeft: left };
}

/** The tokens the requests section may take (SPEC 5.2). */
export function requestsShare(contextWindow: number, limits: Limits): number {
  return Math.floor(limits.SUMMARY_REQUESTS_SHARE * contextWindow);
}

/** What stands in the summary for the oldest requests, past the requests share even as references. */
export function leftOutRequests(range: TurnRange): string {
  return `[the requests of turns ${range.from}–${range.to} are not quoted: past the requests share; each is in the transcript]`;
}

function requestsOf(
  h: History,
  input: CompactionPromptInput,
  counter: TokenCounter,
): { requests: QuotedRequest[]; leftOut: TurnRange | null; shareLeft: number } {
  const asked = h.people.filter((r) => r.text !== '');
  const share = requestsShare(input.contextWindow, input.limits);
  const { requests, shareLeft } = quote(asked, share, input.limits, counter);
  const newestLeftOut = asked.at(-requests.length - 1);
  return {
    requests,
    leftOut: newestLeftOut ? { from: 1, to: newestLeftOut.turnN } : null,
    shareLeft,
  };
}

/**
 * The requests the summary of `input` keeps, the turns of those left out, and the tokens of the
 * requests share they take and leave: what the worker checks while it reads the person's messages
 * backwards, without building the whole prompt.
 */
export function summaryRequests(input: CompactionPromptInput): {
  requests: QuotedRequest[];
  leftOut: TurnRange | null;
  tokens: number;
  shareLeft: number;
} {
  const asked = requestsOf(history(input), input, input.counter ?? sharedTokenCounter);
  return { ...asked, tokens: requestsShare(input.contextWindow, input.limits) - asked.shareLeft };
}

// --- The language sample -------------------------------------------------------------------------

const RUNTIME_NOTE = /^\[[^\]\n]*\](\s|$)/;
const SUMMARY_SECTION = new RegExp(
  `^(#+\\s*(${SUMMARY_SECTIONS.join('|')})\\b|\\[?Summary of (turns|earlier conversation)\\b)`,
  'i',
);
const WORDS = new Intl.Segmenter('und', { granularity: 'word' });

function wordCount(text: string): number {
  let n = 0;
  for (const s of WORDS.segment(text)) if (s.isWordLike) n += 1;
  return n;
}

/** A paragraph as the sample quotes it, or null when the sample leaves it out. */
function sampleParagraph(paragraph: string, limits: Limits): string | null {
  let p = paragraph.trim();
  if (RUNTIME_NOTE.test(p) || SUMMARY_SECTION.test(p)) return null;
  const slugs = parseLeadingSlugs(p);
  p = (slugs.isCompact ? (slugs.compactInstructions ?? '') : slugs.rest).trim();
  if (p === '' || /^\/\S+$/.test(p)) return null;
  if (wordCount(p) < 3) return null;
  return cutText(p, limits.SUMMARY_PARAGRAPH_CHARS);
}

/**
 * The person's latest paragraphs (SUMMARY_LANGUAGE_PARAGRAPHS, each cut to SUMMARY_PARAGRAPH_CHARS),
 * oldest first, leaving out runtime notes, replayed summary sections, slash commands (leading
 * `/slug` tokens are removed; a paragraph that is only a command is dropped) and paragraphs of
 * fewer than three words.
 */
export function languageSample(texts: readonly string[], limits: Limits): string[] {
  const kept: string[] = [];
  // Newest first, stopping once the sample is full: a long history is not segmented into words.
  for (let i = texts.length - 1; i >= 0; i--) {
    for (const paragraph of texts[i].split(/\n\s*\n/).reverse()) {
      if (kept.length >= limits.SUMMARY_LANGUAGE_PARAGRAPHS) return kept.reverse();
      const quoted = sampleParagraph(paragraph, limits);
      if (quoted !== null) kept.push(quoted);
    }
  }
  return kept.reverse();
}

// --- Rendering the history -----------------------------------------------------------------------

/** A result for the summary: its reference always shown, so a fact can carry it. */
function resultLine(result: ToolResultBlock, limits: Limits): string {
  const ref = result.ref ? ` (ref:${result.ref})` : '';
  const outcome = result.outcome === 'ok' ? '' : `[outcome: ${result.outcome}] `;
  const content = cutText(result.content, limits.RESULT_PREVIEW_CHARS);
  const cut = content.length < result.content.length ? ' … [cut]' : '';
  return `Result of ${result.callId}${ref}: ${outcome}${content}${cut}`;
}

function blockLine(block: Block, limits: Limits): string | null {
  switch (block.kind) {
    case 'text':
      return block.narration || block.text.trim() === '' ? null : `Agent: ${block.text}`;
    case 'tool_use':
      return `Agent called ${block.name} ${replayArguments(block.arguments, limits.ARG_STRING_CHARS)} (call ${block.callId})`;
    case 'tool_result':
      return resultLine(block, limits);
    case 'clarification_request':
      return `Agent asked the person: ${block.question}${block.answer === null ? ' (no answer)' : `\nPerson answered: ${block.answer}`}`;
    case 'approval_request': {
      const verdict = block.approved === null ? 'pending' : block.approved ? 'approved' : 'denied';
      return `Agent asked approval to call ${block.name}: ${verdict}${block.note ? ` (${block.note})` : ''}`;
    }
    default:
      return null; // thinking never enters; a compaction cannot follow the cut
  }
}

function renderStretch(s: Stretch, limits: Limits): string {
  const lines = [`### Turn ${s.turnN}${s.current ? ' (the current turn, so far)' : ''}`];
  for (const m of s.messages) {
    if (m.role === 'user') {
      const text = personText(m);
      const attached = m.attachmentIds.length > 0 ? ` [attachments: ${m.attachmentIds.join(', ')}]` : '';
      if (text !== '' || attached !== '')
        lines.push(`Person${isSteering(m) ? ' (while the turn ran)' : ''}: ${text}${attached}`);
      continue;
    }
    for (const b of m.blocks) {
      const line = blockLine(b, limits);
      if (line !== null) lines.push(line);
    }
  }
  return lines.join('\n');
}

/** A request as "Requests to keep" lists it. */
function requestEntry(turnN: number, quoted: string): string {
  return `${turnLine(turnN)}${quoteBlock(quoted)}`;
}

function turnLine(turnN: number): string {
  return `Turn ${turnN}:\n`;
}

/**
 * The tokens of `turnLine(turnN)` without encoding it: o200k splits it into `Turn`, ` `, the digits
 * in groups of up to three and `:\n`, each one token (checked against the encoder in the tests). A
 * first compaction of a long conversation measures thousands of them.
 */
export function turnLineTokens(turnN: number): number {
  return 3 + Math.ceil(String(turnN).length / 3);
}

function quoteBlock(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

// --- The prompt ----------------------------------------------------------------------------------

function instructionsText(
  p: Omit<CompactionPrompt, 'messages' | 'tools' | 'turnsLeftOut'>,
  guidance: string | null,
): string {
  const parts = [
    'You write the summary that replaces the earlier part of a conversation between a person and an AI agent. The agent goes on from your summary alone, so keep everything it needs to continue the work.',
    `Begin with exactly this line: ${p.heading}
Then write these sections, with these English headings, in this order:
## Requests
Every request of the person, oldest first: each request listed under "Requests to keep", copied verbatim, one bullet each: "- Turn <n>: <request>". A request listed shortened is copied as listed, with its reference${p.requestsLeftOut ? '; so is the line standing for the requests not quoted, as the first bullet' : ''}.
## Decisions
What was decided, and by whom.
## Work done
What was done, with its file paths and artifact ids. No tool result references here.
## Open work
What is still to do, with the task list.
## Facts
The facts the rest depends on, each followed by the ref:<id> of the tool result that found it.`,
    `Language: write the summary in the language most of the quoted paragraphs of the person (under "Language sample") are in${p.languageSample.length === 0 ? '; there are none, so keep the language of the conversation' : ''}. Keep the section headings in English. Copy quotations, names, document codes, figures, paths, ids and references (ref:…) exactly as they are, untranslated.`,
  ];
  if (p.earlierSummary) {
    parts.push(
      `The history opens with an earlier summary, under the note "${summaryNote(p.earlierSummary)}". Carry everything in it into the new summary: its decisions, work done, open work and facts, with their references. Its requests are listed again under "Requests to keep", with every later one: copy them from there.`,
    );
  }
  if (p.instructions) parts.push(`Instructions from the person for this summary:\n${p.instructions}`);
  if (guidance?.trim()) parts.push(`Guidance from the agent's author for summaries:\n${guidance.trim()}`);
  return parts.join('\n\n');
}

/** The note standing for the oldest turns left out of the conversation. */
function turnsLeftOutNote(range: TurnRange): string {
  const n = range.to - range.from + 1;
  return `[Turns ${range.from}–${range.to} (${n} ${n === 1 ? 'turn' : 'turns'}) are left out for length; their requests are under "Requests to keep".]`;
}

/**
 * The conversation as the summary prompt shows it, within `tokens`: newest first, each turn whole
 * while it fits; from the first that does not, it and every older turn are left out, named by one
 * note (its room is kept from the start), so what is shown is the recent end in one piece and the
 * older turns live on in their requests. Each turn is counted apart, plus one token for the blank
 * line that joins it.
 */
function fitConversation(
  h: History,
  tokens: number,
  limits: Limits,
  counter: TokenCounter,
): { text: string; leftOut: TurnRange | null } {
  const newest = h.stretches.at(-1);
  if (!newest) return { text: '(nothing)', leftOut: null };
  let left = tokens - counter.count(turnsLeftOutNote({ from: h.firstTurnN, to: newest.turnN }));
  const shown: string[] = [];
  let oldest = h.stretches.length;
  while (oldest > 0) {
    const text = renderStretch(h.stretches[oldest - 1], limits);
    const cost = counter.count(text) + 1;
    if (cost > left) break;
    left -= cost;
    shown.push(text);
    oldest -= 1;
  }
  const leftOut = oldest > 0 ? { from: h.firstTurnN, to: h.stretches[oldest - 1].turnN } : null;
  shown.reverse();
  return { text: [...(leftOut ? [turnsLeftOutNote(leftOut)] : []), ...shown].join('\n\n'), leftOut };
}

/**
 * The summary call of SPEC 5.2 for both triggers: instructions, then the history since the earlier
 * summary (that summary first, under its note), the requests to keep and the language sample. It
 * offers no tools and fits `summaryPromptBudget` (by the token projection): everything but the
 * conversation is bounded on its own (the earlier summary is carried whole, the requests by their
 * share, the sample by its limits), and the conversation gets the rest (`fitConversation`).
 */
export function buildCompactionPrompt(input: CompactionPromptInput): CompactionPrompt {
  const { limits } = input;
  const counter = input.counter ?? sharedTokenCounter;
  const coversTurns = coveredTurns(input.trigger, input.current.n);
  const heading = summaryHeading(coversTurns.to);
  const h = history(input);
  const { earlier } = h;
  const { requests, leftOut: requestsLeftOut, shareLeft } = requestsOf(h, input, counter);
  const opening = input.current.messages.find((m) => m.role === 'user');
  const instructions =
    input.trigger === 'MANUAL' && opening
      ? parseLeadingSlugs(messageText(opening)).compactInstructions
      : null;
  const sample = languageSample(
    [...h.people.map((p) => p.text), ...(instructions ? [instructions] : [])],
    limits,
  );

  const described = {
    coversTurns,
    heading,
    requests,
    requestsLeftOut,
    languageSample: sample,
    earlierSummary: earlier,
    instructions,
  };
  const leftOutEntry =
    requestsLeftOut &&
    `Turns ${requestsLeftOut.from}–${requestsLeftOut.to}:\n${quoteBlock(leftOutRequests(requestsLeftOut))}`;
  const quoted = [
    ...(leftOutEntry ? [leftOutEntry] : []),
    ...requests.map((r) => requestEntry(r.turnN, r.quoted)),
  ];
  const messages = (conversation: string, quotedText = quoted.join('\n\n')): ChatRequest['messages'] => [
    { role: 'system', content: instructionsText(described, input.guidance ?? null) },
    {
      role: 'user',
      content: [
        ...(earlier ? [`${summaryNote(earlier)}\n\n${earlier.summary}`] : []),
        `## Conversation${earlier ? ' since the earlier summary' : ''}`,
        conversation,
        `## Requests to keep (${requests.length}, oldest first)`,
        quoted.length > 0 ? quotedText : '(none)',
        '## Language sample',
        sample.length > 0 ? sample.map(quoteBlock).join('\n\n') : '(none)',
      ].join('\n\n'),
    },
    { role: 'user', content: `Write the summary now, beginning with the line "${heading}".` },
  ];
  // The requests were measured entry by entry while they were chosen: their sum (one token for
  // each separator), not an encoding of the whole section again.
  const quotedTokens =
    requestsShare(input.contextWindow, limits) -
    shareLeft +
    (leftOutEntry ? counter.count(leftOutEntry) : 0) +
    quoted.length;
  const rest = projectTokens({ messages: messages('', ''), tools: [] }, { counter }) + quotedTokens;
  const conversation = fitConversation(
    h,
    summaryPromptBudget(input.contextWindow, limits) - rest,
    limits,
    counter,
  );
  return {
    ...described,
    turnsLeftOut: conversation.leftOut,
    messages: messages(conversation.text),
    tools: [],
  };
}

// --- The answer ----------------------------------------------------------------------------------

function normalise(text: string): string {
  // Every run of white space as one space; a lone space, the most of them, is left as it is.
  return text.replace(/\s{2,}|[^\S ]/g, ' ').trim();
}

function requestBullet(r: QuotedRequest): string {
  return `- Turn ${r.turnN}: ${r.quoted.replace(/\n/g, '\n  ')}`;
}

const HEADING_LINE = /^#{1,6}\s+\S/;
const REQUESTS_HEADING = /^#{1,6}\s*Requests\s*:?\s*$/i;

/** `lines` with `bullets` added at the end of the Requests section (made after the first line when missing). */
function addToRequests(lines: string[], bullets: string[]): string[] {
  const at = lines.findIndex((l) => REQUESTS_HEADING.test(l.trim()));
  if (at < 0) return [lines[0], '', '## Requests', ...bullets, '', ...lines.slice(1)];
  let end = lines.findIndex((l, i) => i > at && HEADING_LINE.test(l.trim()));
  if (end < 0) end = lines.length;
  let insert = end;
  while (insert > at + 1 && lines[insert - 1].trim() === '') insert -= 1;
  return [...lines.slice(0, insert), ...bullets, ...lines.slice(insert)];
}

/**
 * The model's answer made a summary: it opens with `Summary of turns 1–N` (the line is corrected
 * or added), and every request the prompt lists appears verbatim (compared with runs of whitespace
 * as one space), as does the line standing for those not quoted; a missing one is restored at the
 * end of the Requests section, which is added when the answer has none.
 */
export function finishSummary(
  answer: string,
  prompt: Pick<CompactionPrompt, 'heading' | 'requests'> & Partial<Pick<CompactionPrompt, 'requestsLeftOut'>>,
): { summary: string; restored: QuotedRequest[] } {
  let lines = answer.trim().split('\n');
  const first = /^\s*#*\s*\**Summary of turns\s+\d+\s*[–-]\s*\d+\**/i;
  if (first.test(lines[0] ?? '')) lines[0] = lines[0].replace(first, prompt.heading);
  else lines = [prompt.heading, '', ...lines];
  const present = normalise(lines.join('\n'));
  // A summary lists the requests in their order most often: each is looked for after the last one
  // found, and in the whole summary only when it is not there, so checking thousands stays linear.
  let after = 0;
  const restored = prompt.requests.filter((r) => {
    const quoted = normalise(r.quoted);
    const at = present.indexOf(quoted, after);
    if (at >= 0) after = at + quoted.length;
    return at < 0 && !present.includes(quoted);
  });
  const range = prompt.requestsLeftOut;
  const bullets = [
    ...(range && !present.includes(normalise(leftOutRequests(range)))
      ? [`- Turns ${range.from}–${range.to}: ${leftOutRequests(range)}`]
      : []),
    ...restored.map(requestBullet),
  ];
  if (bullets.length > 0) lines = addToRequests(lines, bullets);
  return { summary: lines.join('\n').trim(), restored };
}

/** The summary as people see it: the model reads the `ref:` references, the screen does not. */
export function summaryForPeople(summary: string): string {
  return summary
    .replace(/[ \t]*[([]ref:[A-Za-z0-9_-]+[)\]]/g, '')
    .replace(/[ \t]*\bref:[A-Za-z0-9_-]+/g, '')
    .replace(/[ \t]+$/gm, '');
}
