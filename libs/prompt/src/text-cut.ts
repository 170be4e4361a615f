/**
 * Characters as the spec counts them: Unicode code points. A text is only ever cut between grapheme
 * clusters (a letter with its tone marks, an emoji with its joiners, a flag), so a cut never leaves
 * half of what a reader sees as one character.
 */

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const SURROGATE_PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

/** The number of code points in `text`. */
export function charCount(text: string): number {
  return text.length - (text.match(SURROGATE_PAIR)?.length ?? 0);
}

/**
 * The longest run of whole grapheme clusters of `text` that holds at most `max` code points: its
 * start, or with `from: 'end'` its end. A text that fits is returned as it is.
 */
export function cutText(text: string, max: number, from: 'start' | 'end' = 'start'): string {
  // UTF-16 units are never fewer than code points: a text this short fits.
  if (text.length <= max) return text;
  if (from === 'end') return reverseCut(text, max);
  let kept = 0;
  let end = 0;
  for (const { segment, index } of graphemes.segment(text)) {
    const size = charCount(segment);
    if (kept + size > max) break;
    kept += size;
    end = index + segment.length;
  }
  return text.slice(0, end);
}

/** The end of `text`: cluster boundaries depend on what precedes them (a run of flags), so all are read. */
function reverseCut(text: string, max: number): string {
  const clusters = Array.from(graphemes.segment(text), (s) => s.segment);
  let kept = 0;
  let start = clusters.length;
  while (start > 0 && kept + charCount(clusters[start - 1]) <= max) kept += charCount(clusters[--start]);
  return clusters.slice(start).join('');
}
