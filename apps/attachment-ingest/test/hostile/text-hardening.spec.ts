import fc from 'fast-check';
import { markdownHeadings, textHeadings } from '../../src/text/headings.util';
import {
  MAX_COMBINING_RUN,
  PAGE_TEXT_MAX_CHARS,
  storablePage,
  storableText,
  streamSafe,
} from '../../src/text/storable-text.util';

/** The ATX pattern the headings used before: right, but quadratic in a line of blanks. */
const OLD_ATX = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
function oldMarkdownHeading(line: string): string | null {
  const atx = OLD_ATX.exec(line);
  return atx && atx[1].trim() ? atx[1].replace(/\s+/g, ' ').trim().slice(0, 200) : null;
}

describe('ATX headings without a backtracking regex', () => {
  it('finds the same heading as the old pattern on any short line', () => {
    const line = fc
      .array(fc.constantFrom('#', ' ', '\t', 'a', 'B', '\u00a0', 'ệ', '\u0301'), { maxLength: 16 })
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(line, (l) => {
        const now = markdownHeadings(l, 5);
        const before = oldMarkdownHeading(l);
        expect(now).toEqual(before === null ? [] : [before]);
      }),
      { seed: 4367, numRuns: 3000 },
    );
  });

  it('reads a heading line of two million blanks, and thousands of blank heading lines', () => {
    expect(markdownHeadings(`# a${' '.repeat(2_000_000)}b`, 20)).toEqual([`a b`]);
    const blankHeadings = `${'#'.padEnd(1001)}\n`.repeat(5000);
    expect(textHeadings(`${blankHeadings}# Real\n`, 20)).toEqual(['Real']);
  });
});

describe('storable text', () => {
  const marks = (n: number) =>
    Array.from({ length: n }, (_, i) => ['\u0301', '\u0316', '\u0323'][i % 3]).join('');
  /** The longest run of combining marks between two joiners (U+034F is a mark, and a starter). */
  const longestMarkRun = (text: string) =>
    Math.max(0, ...[...text.matchAll(/(?:(?!\u034f)\p{M})+/gu)].map((m) => Array.from(m[0]).length));

  it('breaks runs of more than 30 combining marks with U+034F, so NFC never sees a long run', () => {
    const zalgo = `Z${marks(200_000)}algo`;
    const safe = streamSafe(zalgo);
    expect(longestMarkRun(safe)).toBe(MAX_COMBINING_RUN);
    expect(safe.replace(/\u034f/g, '')).toBe(zalgo);
    const stored = storableText(zalgo);
    expect(longestMarkRun(stored)).toBeLessThanOrEqual(MAX_COMBINING_RUN);
    expect(stored.endsWith('algo')).toBe(true);
  });

  it('leaves real text alone: Vietnamese with tone marks, decomposed or not, comes out NFC', () => {
    const vi = 'Tiếng Việt có dấu: người ướt, quyển sách mỏng.';
    expect(storableText(vi.normalize('NFD'))).toBe(vi.normalize('NFC'));
    expect(streamSafe(vi.normalize('NFD'))).toBe(vi.normalize('NFD'));
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => {
        expect(storableText(s)).toBe(s.normalize('NFC').replaceAll('\u0000', ''));
      }),
      { seed: 15, numRuns: 500 },
    );
  });

  it('drops U+0000, which Postgres text cannot hold', () => {
    expect(storableText('A\u0000B\u0000\u0000C')).toBe('ABC');
  });

  it('cuts a page past 100,000 characters (code points) with a note, never inside a cluster', () => {
    expect(storablePage('short page')).toBe('short page');
    const long = `${'x'.repeat(PAGE_TEXT_MAX_CHARS - 1)}🙂${'y'.repeat(10)}`;
    const page = storablePage(long);
    expect(page.startsWith(`${'x'.repeat(PAGE_TEXT_MAX_CHARS - 1)}🙂\n`)).toBe(true);
    expect(page).toMatch(/\[page cut: it holds 100010 characters; the first 100000 are kept\]$/);
    const flagAtTheCut = storablePage(`${'x'.repeat(PAGE_TEXT_MAX_CHARS - 1)}🇻🇳`);
    expect(flagAtTheCut.startsWith(`${'x'.repeat(PAGE_TEXT_MAX_CHARS - 1)}\n`)).toBe(true);
  });
});
