import { cutText } from '@portal/prompt';

/** A document's own section headings, when its PDF outline gives none (SPEC section 7). */

const MAX_HEADING_CHARS = 200;

/** The text's headings: its markdown headings when it has any, else the lines that look like headings. */
export function textHeadings(text: string, max: number): string[] {
  const markdown = markdownHeadings(text, max);
  return markdown.length ? markdown : heuristicHeadings(text, max);
}

/** ATX (`# Title`) and setext (`Title` over `===` or `---`) headings, outside fenced code. */
export function markdownHeadings(text: string, max: number): string[] {
  const lines = text.split(/\r?\n/);
  const found: string[] = [];
  let fence: string | null = null;
  for (let i = 0; i < lines.length && found.length < max; i++) {
    const line = lines[i];
    const fenceMark = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fenceMark && (fence === null || fenceMark.startsWith(fence))) {
      fence = fence === null ? fenceMark : null;
      continue;
    }
    if (fence !== null) continue;
    const atx = atxTitle(line);
    if (atx) {
      found.push(clean(atx));
      continue;
    }
    const underline = lines[i + 1];
    if (underline !== undefined && /^ {0,3}(=+|-{2,})[ \t]*$/.test(underline) && isPlainLine(line)) {
      found.push(clean(line));
      i++;
    }
  }
  return found;
}

/**
 * The title of an ATX heading line (`## Title ##`), or null. Parsed without a backtracking regex:
 * `/^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/` takes time quadratic in the line's length, and one
 * uploaded line of blanks held the ingest worker's event loop for minutes.
 */
function atxTitle(line: string): string | null {
  const open = /^ {0,3}#{1,6}[ \t]/.exec(line);
  if (!open) return null;
  let title = trimBlanks(line.slice(open[0].length));
  let end = title.length;
  while (end > 0 && title[end - 1] === '#') end--;
  // A closing run of `#` counts only after a blank (a title of `#`s only is kept, as it was).
  if (end > 0 && isBlank(title[end - 1])) title = trimBlanks(title.slice(0, end));
  return title.trim() ? title : null;
}

const isBlank = (c: string | undefined) => c === ' ' || c === '\t';

/** Spaces and tabs off both ends (only those, as `[ \t]` in the old pattern). */
function trimBlanks(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isBlank(text[start])) start++;
  while (end > start && isBlank(text[end - 1])) end--;
  return text.slice(start, end);
}

/**
 * Lines that look like headings in plain text: short (at most 80 characters and 12 words),
 * starting with a capital letter or a section number, not a list item or table row (`|` or tabs), not ending a
 * sentence (a question may be a heading), and standing alone: the next line is blank, the end,
 * a list or table, or clearly longer, as a paragraph under a title is.
 */
export function heuristicHeadings(text: string, max: number): string[] {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  const found: string[] = [];
  for (let i = 0; i < lines.length && found.length < max; i++) {
    const line = lines[i];
    if (!looksLikeHeading(line)) continue;
    let next = i + 1;
    while (next < lines.length && lines[next] === '') next++;
    const nextLine = lines[next];
    const previous = i > 0 ? lines[i - 1] : '';
    const alone = lines[i + 1] === undefined || lines[i + 1] === '' || nextLine === undefined;
    const titlesWhatFollows =
      nextLine !== undefined &&
      (nextLine.length >= line.length * 1.5 || /^([-*+•|]|\d+[.)]\s)/.test(nextLine));
    const startsBlock = previous === '' || /[.!?:;)]$/.test(previous) || !looksLikeProse(previous);
    if ((alone || titlesWhatFollows) && startsBlock) found.push(clean(line));
  }
  return found;
}

function looksLikeHeading(line: string): boolean {
  if (line.length < 2 || line.length > 80 || line.split(/\s+/).length > 12) return false;
  if (/^([-*+•>|]|\d+[.)]?\s*$)/.test(line) || /[|\t]/.test(line)) return false;
  if (/[.,;:!…]$/.test(line)) return false;
  return /^(\p{Lu}|\d+(\.\d+)*\.?\s+\p{L})/u.test(line);
}

/** A line of running text: long, or ending like a sentence. */
function looksLikeProse(line: string): boolean {
  return line.length > 80 || /[.,;:!?…]$/.test(line);
}

function isPlainLine(line: string): boolean {
  return line.trim() !== '' && !/^ {0,3}([-*+>|]|#)/.test(line);
}

function clean(heading: string): string {
  return cutText(heading.replace(/\s+/g, ' ').trim(), MAX_HEADING_CHARS);
}
