import { charCount, cutText } from '@portal/prompt';

/**
 * Text as it is stored, from a file nobody vetted: every page goes through here before Postgres.
 *
 * - Runs of combining marks are broken every 30 marks with U+034F COMBINING GRAPHEME JOINER (the
 *   "stream-safe" form of UAX #15) before NFC: normalising one letter under 200,000 marks takes V8
 *   about a minute (its reordering is quadratic in the run), all of it on the worker's event loop.
 *   No real text has more than a handful of marks on a letter.
 * - U+0000 is dropped: Postgres text cannot hold it, and PDFs with broken font maps produce it.
 * - A page is cut at PAGE_TEXT_MAX_CHARS: its search index (one tsvector per page) holds at most
 *   1 MB, and no real page comes near 100,000 characters.
 */

/** Combining marks kept in one run (UAX #15 stream-safe text allows 30 non-starters). */
export const MAX_COMBINING_RUN = 30;
/** Characters of one page that are stored and indexed. */
export const PAGE_TEXT_MAX_CHARS = 100_000;

const COMBINING_GRAPHEME_JOINER = '\u034f';
const LONG_MARK_RUN = new RegExp(`\\p{M}{${MAX_COMBINING_RUN + 1},}`, 'gu');

/** `text` with every run of more than 30 combining marks broken by U+034F after each 30. */
export function streamSafe(text: string): string {
  return text.replace(LONG_MARK_RUN, (run) => {
    const marks = Array.from(run);
    const parts: string[] = [];
    for (let i = 0; i < marks.length; i += MAX_COMBINING_RUN)
      parts.push(marks.slice(i, i + MAX_COMBINING_RUN).join(''));
    return parts.join(COMBINING_GRAPHEME_JOINER);
  });
}

/** Stream-safe, NFC, without U+0000. */
export function storableText(text: string): string {
  return streamSafe(text).normalize('NFC').replaceAll('\u0000', '');
}

/** A page's text as stored: at most PAGE_TEXT_MAX_CHARS characters (a note says so), then `storableText`. */
export function storablePage(text: string): string {
  const kept = cutText(text, PAGE_TEXT_MAX_CHARS);
  if (kept === text) return storableText(text);
  return `${storableText(kept)}\n[page cut: it holds ${charCount(text)} characters; the first ${charCount(kept)} are kept]`;
}
