import type {
  Block,
  CompactionBlock,
  CompactionTrigger,
  MemoryWindow,
  Message,
  ToolResultBlock,
} from '@portal/domain';
import type { ChatRequest } from './chat.types';
import type { Limits } from './limits';
import { cutChars, replayArguments, summaryNote } from './memory';
import { parseLeadingSlugs } from './skills.util';
import { sharedTokenCounter, type TokenCounter } from './tokens';

/** SPEC section 5.2: the summary prompt, the same for both triggers, and the checks on its answer. */

/** The summary's sections, in order, with their English headings. */
export const SUMMARY_SECTIONS = ['Requests', 'Decisions', 'Work done', 'Open work', 'Facts'] as const;

/** Characters an old request keeps once the requests section is past its share of the window. */
export const SHORTENED_REQUEST_CHARS = 200;

/** The line every summary opens with: the turns it covers, always from turn 1. */
export function summaryHeading(to: number): string {
  return `Summary of turns 1–${to}`;
}

/** The turns a compaction covers: up to the running turn (AUTO), or up to the one before the `/compact` turn. */
export function coveredTurns(trigger: CompactionTrigger, turnN: number): { from: 1; to: number } {
  return { from: 1, to: trigger === 'AUTO' ? turnN : Math.max(1, turnN - 1) };
}

export interface CompactionPromptInput {
  /** The newest summary before the current turn and EVERY settled turn after it (turnsReplayed Infinity). */
  window: MemoryWindow;
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
  /** Every request since the earlier summary, oldest first. */
  requests: QuotedRequest[];
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

/** The earlier summary and what came after it, turn by turn, the current turn last (AUTO only). */
function history(input: CompactionPromptInput): { earlier: CompactionBlock | null; stretches: Stretch[] } {
  let earlier = input.window.summary?.block ?? null;
  let stretches: Stretch[] = input.window.turns.map((t) => {
    const after = afterCompaction(t.messages);
    return { turnN: t.turn.n, current: false, messages: after.messages };
  });
  if (input.trigger === 'AUTO') {
    const after = afterCompaction(input.current.messages);
    if (after.summary) [earlier, stretches] = [after.summary, []];
    stretches.push({ turnN: input.current.n, current: true, messages: after.messages });
  }
  return { earlier, stretches: stretches.filter((s) => s.messages.length > 0) };
}

function isSteering(message: Message): boolean {
  return message.blocks.some((b) => b.kind === 'text' && b.steering);
}

function messageText(message: Message): string {
  return message.blocks.flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
}

/** A user message as the model read it: the opening one without its leading slugs, steering as typed. */
function personText(message: Message): string {
  const text = messageText(message);
  return (isSteering(message) ? text : parseLeadingSlugs(text).rest).trim();
}

// --- Requests ----------------------------------------------------------------------------------

function requestRef(r: Pick<QuotedRequest, 'turnN' | 'messageId'>): string {
  return `[shortened; whole request: turn ${r.turnN}, message ${r.messageId}]`;
}

/**
 * Every request since the earlier summary, oldest first. Newest first, requests are kept whole
 * while they fit SUMMARY_REQUESTS_SHARE of the context window (in tokens); from the first one that
 * does not, every older one is shortened with a reference to its message (to the reference alone
 * when even the shortened form does not fit).
 */
export function quoteRequests(
  requests: ReadonlyArray<Pick<QuotedRequest, 'turnN' | 'messageId' | 'text'>>,
  contextWindow: number,
  limits: Limits,
  counter: TokenCounter = sharedTokenCounter,
): QuotedRequest[] {
  let left = Math.floor(limits.SUMMARY_REQUESTS_SHARE * contextWindow);
  let shortening = false;
  const out: QuotedRequest[] = [];
  for (const r of [...requests].reverse()) {
    const whole = counter.count(r.text);
    if (!shortening && whole <= left) {
      left -= whole;
      out.push({ ...r, quoted: r.text, shortened: false });
      continue;
    }
    shortening = true;
    const start = cutChars(r.text, SHORTENED_REQUEST_CHARS).trim();
    const short = `${start} … ${requestRef(r)}`;
    const quoted = counter.count(short) <= left ? short : requestRef(r);
    left = Math.max(0, left - counter.count(quoted));
    out.push({ ...r, quoted, shortened: true });
  }
  return out.reverse();
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
  return cutChars(p, limits.SUMMARY_PARAGRAPH_CHARS);
}

/**
 * The person's latest paragraphs (SUMMARY_LANGUAGE_PARAGRAPHS, each cut to SUMMARY_PARAGRAPH_CHARS),
 * oldest first, leaving out runtime notes, replayed summary sections, slash commands (leading
 * `/slug` tokens are removed; a paragraph that is only a command is dropped) and paragraphs of
 * fewer than three words.
 */
export function languageSample(texts: readonly string[], limits: Limits): string[] {
  const paragraphs = texts.flatMap((t) => t.split(/\n\s*\n/));
  const kept = paragraphs.flatMap((p) => sampleParagraph(p, limits) ?? []);
  return limits.SUMMARY_LANGUAGE_PARAGRAPHS === 0 ? [] : kept.slice(-limits.SUMMARY_LANGUAGE_PARAGRAPHS);
}

// --- Rendering the history -----------------------------------------------------------------------

/** A result for the summary: its reference always shown, so a fact can carry it. */
function resultLine(result: ToolResultBlock, limits: Limits): string {
  const ref = result.ref ? ` (ref:${result.ref})` : '';
  const outcome = result.outcome === 'ok' ? '' : `[outcome: ${result.outcome}] `;
  const content = cutChars(result.content, limits.RESULT_PREVIEW_CHARS);
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

function quoteBlock(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}

// --- The prompt ----------------------------------------------------------------------------------

function instructionsText(p: Omit<CompactionPrompt, 'messages' | 'tools'>, guidance: string | null): string {
  const parts = [
    'You write the summary that replaces the earlier part of a conversation between a person and an AI agent. The agent goes on from your summary alone, so keep everything it needs to continue the work.',
    `Begin with exactly this line: ${p.heading}
Then write these sections, with these English headings, in this order:
## Requests
Every request of the person, oldest first: ${p.earlierSummary ? 'the requests the earlier summary keeps, as it keeps them, then ' : ''}each request listed under "Requests to keep", copied verbatim, one bullet each: "- Turn <n>: <request>". A request listed shortened is copied as listed, with its reference.
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
      `The history opens with an earlier summary, under the note "${summaryNote(p.earlierSummary)}". Carry everything in it into the new summary: its requests, decisions, work done, open work and facts, with their references.`,
    );
  }
  if (p.instructions) parts.push(`Instructions from the person for this summary:\n${p.instructions}`);
  if (guidance?.trim()) parts.push(`Guidance from the agent's author for summaries:\n${guidance.trim()}`);
  return parts.join('\n\n');
}

/**
 * The summary call of SPEC 5.2 for both triggers: instructions, then the history since the earlier
 * summary (that summary first, under its note), the requests to keep and the language sample. It
 * offers no tools.
 */
export function buildCompactionPrompt(input: CompactionPromptInput): CompactionPrompt {
  const { limits } = input;
  const counter = input.counter ?? sharedTokenCounter;
  const coversTurns = coveredTurns(input.trigger, input.current.n);
  const heading = summaryHeading(coversTurns.to);
  const { earlier, stretches } = history(input);

  const people = stretches.flatMap((s) =>
    s.messages.filter((m) => m.role === 'user').map((m) => ({ turnN: s.turnN, message: m })),
  );
  const requests = quoteRequests(
    people
      .map(({ turnN, message }) => ({ turnN, messageId: message.id, text: personText(message) }))
      .filter((r) => r.text !== ''),
    input.contextWindow,
    limits,
    counter,
  );
  const opening = input.current.messages.find((m) => m.role === 'user');
  const instructions =
    input.trigger === 'MANUAL' && opening
      ? parseLeadingSlugs(messageText(opening)).compactInstructions
      : null;
  const sample = languageSample(
    [...people.map((p) => personText(p.message)), ...(instructions ? [instructions] : [])],
    limits,
  );

  const prompt = {
    coversTurns,
    heading,
    requests,
    languageSample: sample,
    earlierSummary: earlier,
    instructions,
  };
  const material = [
    ...(earlier ? [`${summaryNote(earlier)}\n\n${earlier.summary}`] : []),
    `## Conversation${earlier ? ' since the earlier summary' : ''}`,
    stretches.length > 0 ? stretches.map((s) => renderStretch(s, limits)).join('\n\n') : '(nothing)',
    `## Requests to keep (${requests.length}, oldest first)`,
    requests.length > 0
      ? requests.map((r) => `Turn ${r.turnN}:\n${quoteBlock(r.quoted)}`).join('\n\n')
      : '(none)',
    '## Language sample',
    sample.length > 0 ? sample.map(quoteBlock).join('\n\n') : '(none)',
  ].join('\n\n');
  return {
    ...prompt,
    messages: [
      { role: 'system', content: instructionsText(prompt, input.guidance ?? null) },
      { role: 'user', content: material },
      { role: 'user', content: `Write the summary now, beginning with the line "${heading}".` },
    ],
    tools: [],
  };
}

// --- The answer ----------------------------------------------------------------------------------

function normalise(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
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
 * or added), and every request of the person since the earlier summary appears verbatim (compared
 * with runs of whitespace as one space); a missing one is restored at the end of the Requests
 * section, which is added when the answer has none.
 */
export function finishSummary(
  answer: string,
  prompt: Pick<CompactionPrompt, 'heading' | 'requests'>,
): { summary: string; restored: QuotedRequest[] } {
  let lines = answer.trim().split('\n');
  const first = /^\s*#*\s*\**Summary of turns\s+\d+\s*[–-]\s*\d+\**/i;
  if (first.test(lines[0] ?? '')) lines[0] = lines[0].replace(first, prompt.heading);
  else lines = [prompt.heading, '', ...lines];
  const present = normalise(lines.join('\n'));
  const restored = prompt.requests.filter((r) => !present.includes(normalise(r.quoted)));
  if (restored.length > 0) lines = addToRequests(lines, restored.map(requestBullet));
  return { summary: lines.join('\n').trim(), restored };
}

/** The summary as people see it: the model reads the `ref:` references, the screen does not. */
export function summaryForPeople(summary: string): string {
  return summary
    .replace(/[ \t]*[([]ref:[A-Za-z0-9_-]+[)\]]/g, '')
    .replace(/[ \t]*\bref:[A-Za-z0-9_-]+/g, '')
    .replace(/[ \t]+$/gm, '');
}
