import fc from 'fast-check';
import { splitTextPages } from './text-pages.util';

describe('splitTextPages', () => {
  it('keeps a short text as one page and an empty one as none', () => {
    expect(splitTextPages('Xin chào', 100)).toEqual(['Xin chào']);
    expect(splitTextPages('', 100)).toEqual([]);
  });

  it('ends a page after a line break in its second half', () => {
    const text = `${'a'.repeat(60)}\n${'b'.repeat(30)}\n${'c'.repeat(50)}`;
    const pages = splitTextPages(text, 100);
    expect(pages).toEqual([`${'a'.repeat(60)}\n${'b'.repeat(30)}\n`, 'c'.repeat(50)]);
  });

  it('falls back to white space, then to a hard cut', () => {
    expect(splitTextPages(`${'x'.repeat(70)} ${'y'.repeat(40)}`, 100)).toEqual([
      `${'x'.repeat(70)} `,
      'y'.repeat(40),
    ]);
    expect(splitTextPages('z'.repeat(250), 100)).toEqual(['z'.repeat(100), 'z'.repeat(100), 'z'.repeat(50)]);
  });

  it('never splits a surrogate pair', () => {
    const text = `${'a'.repeat(9)}😀${'b'.repeat(5)}`;
    const pages = splitTextPages(text, 10);
    expect(pages[0]).toBe('a'.repeat(9));
    expect(pages.join('')).toBe(text);
  });

  it('gives the text back exactly, each page within the size', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 400 }),
        fc.integer({ min: 4, max: 60 }),
        (text, size) => {
          const pages = splitTextPages(text, size);
          expect(pages.join('')).toBe(text);
          for (const page of pages) {
            expect(page.length).toBeGreaterThan(0);
            expect(page.length).toBeLessThanOrEqual(size);
          }
        },
      ),
    );
  });
});
