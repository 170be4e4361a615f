import type { ChatMessage } from './chat.types';
import { cutText } from './text-cut';
import { parseLeadingSlugs } from './skills.util';

/** SPEC section 3: the `summary` side call that names a conversation once its first turn settles. */

/** The most a title keeps; a longer reply is cut. */
export const TITLE_MAX_CHARS = 80;
/** How much of the person's message and of the answer the title call reads. */
export const TITLE_INPUT_CHARS = 2000;

/**
 * The title call's messages: no tools; the person's first message (leading `/slug` tokens removed)
 * and the answer as they were, then the request for a title.
 */
export function titlePrompt(input: { request: string; answer: string }): ChatMessage[] {
  const request = cutText(parseLeadingSlugs(input.request).rest.trim(), TITLE_INPUT_CHARS);
  const answer = cutText(input.answer.trim(), TITLE_INPUT_CHARS);
  return [
    {
      role: 'system',
      content:
        'You name conversations. Read the exchange below, then write a short title for it: at most six ' +
        "words, in the language of the person's message, naming its subject.",
    },
    { role: 'user', content: request === '' ? '(no text)' : request },
    ...(answer === '' ? [] : [{ role: 'assistant' as const, content: answer }]),
    {
      role: 'user',
      content: 'Write the title of this conversation. Reply with the title only: no quotes, no full stop.',
    },
  ];
}

/** The title in a reply: its first non-empty line without quotes, a `Title:` label or a full stop. */
export function cleanTitle(reply: string): string | null {
  const line = reply
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l !== '');
  if (!line) return null;
  const title = line
    .replace(/^(?:#+\s*)?(?:title\s*:\s*)?/i, '')
    .replace(/\.$/, '')
    .replace(/^["'“”«*]+|["'“”»*]+$/g, '')
    .trim();
  return title === '' ? null : cutText(title, TITLE_MAX_CHARS).trim();
}
