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
 *
 * Only the one cluster at the cut is looked up (`containing`): iterating a long text's clusters
 * with Intl.Segmenter costs time quadratic in its length on Node 20 (a 40,000-character page took
 * 1.5 s), and pages reach 100,000 characters.
 */
export function cutText(text: string, max: number, from: 'start' | 'end' = 'start'): string {
  // UTF-16 units are never fewer than code points: a text this short fits.
  if (text.length <= max) return text;
  if (from === 'end') {
    const start = unitsBefore(text, charCount(text) - max);
    if (start === 0) return text;
    if (start === text.length) return '';
    // A boundary can depend on everything before it (a run of flags), so the whole text is read.
    const cluster = graphemes.segment(text).containing(start)!;
    return text.slice(cluster.index === start ? start : cluster.index + cluster.segment.length);
  }
  const end = unitsBefore(text, max);
  if (end === text.length) return text;
  // A boundary depends on what precedes it and on a few code units after it.
  return text.slice(0, graphemes.segment(text.slice(0, end + 16)).containing(end)!.index);
}

/** The UTF-16 length of the first `count` code points of `text` (all of it when it has fewer). */
function unitsBefore(text: string, count: number): number {
  let units = 0;
  for (let seen = 0; seen < count && units < text.length; seen++) {
    const code = text.charCodeAt(units);
    units += code >= 0xd800 && code <= 0xdbff && units + 1 < text.length ? 2 : 1;
  }
  return units;
}
