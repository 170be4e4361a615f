import type { ChatMessage } from './chat.types';
import { cutText } from './text-cut';

/** SPEC section 3: the `review` side call of the output guardrail, one per sentence. */

/** How much of the text already shown the review call reads (its end). */
export const REVIEW_CONTEXT_CHARS = 4000;
/** The most of a BLOCK reason the turn's error keeps. */
export const REVIEW_REASON_CHARS = 200;

export type ReviewVerdict = { pass: true } | { pass: false; reason: string };

/** The review call's messages (it offers no tools): the rule, the text shown so far, the sentence. */
export function reviewPrompt(input: { shown: string; sentence: string }): ChatMessage[] {
  const shown = cutText(input.shown, REVIEW_CONTEXT_CHARS, 'end');
  return [
    {
      role: 'system',
      content:
        "You review an AI assistant's reply before people see it, one sentence at a time. Block a " +
        'sentence that is harmful, abusive, or discloses secrets such as credentials; pass anything ' +
        'else. Answer exactly `PASS`, or `BLOCK: <reason>` with a short reason. Write nothing else.',
    },
    {
      role: 'user',
      content:
        `Already shown:\n<shown>\n${shown}\n</shown>\n\n` +
        `Sentence to review:\n<sentence>\n${input.sentence}\n</sentence>`,
    },
  ];
}

/**
 * The reviewer's answer. Only `PASS` (around whitespace) passes: anything else blocks, so a
 * malformed answer fails closed.
 */
export function readVerdict(reply: string): ReviewVerdict {
  const answer = reply.trim();
  if (answer === 'PASS') return { pass: true };
  const block = /^BLOCK:(.*)/s.exec(answer);
  if (!block) return { pass: false, reason: `unreadable review answer "${oneLine(answer, 80)}"` };
  return { pass: false, reason: oneLine(block[1], REVIEW_REASON_CHARS) || 'no reason given' };
}

function oneLine(text: string, max: number): string {
  return cutText(text.replace(/\s+/g, ' ').trim(), max).trim();
}
