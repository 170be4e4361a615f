import type { CompactionTrigger } from '@portal/domain';
import type { ChatRequest } from '../chat.types';
import type { Limits } from '../limits';
import { summaryNote } from '../memory';
import { parseLeadingSlugs } from '../skills.util';
import { projectTokens, sharedTokenCounter, type TokenCounter } from '../tokens';
import type { CompactionPrompt, CompactionPromptInput, TurnRange } from './compaction.types';
import { type History, history, messageText } from './summary-history';
import { leftOutRequests, requestsOf, requestsShare } from './summary-requests';
import { languageSample } from './language-sample';
import { renderStretch, requestEntry } from './history-render';
import { quoteBlock } from './quote.util';

/** SPEC section 5.2: the summary prompt, the same for both triggers. */

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
