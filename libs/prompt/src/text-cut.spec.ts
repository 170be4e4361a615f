import fc from 'fast-check';
import { languageSample } from './compaction';
import { previewResult, replayArguments } from './memory';
import { reviewPrompt } from './review';
import { limits } from './testing/transcript.fixtures';
import { charCount, cutText } from './text-cut';

const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
const clusters = (text: string) => Array.from(segmenter.segment(text), (s) => s.segment);

/** Vietnamese with combining tone marks (NFD), a ZWJ family, a flag, a skin tone, plain ASCII. */
const VIET = 'Tie\u0302\u0301ng Vie\u0323\u0302t'; // "Tiếng Việt" decomposed
const FAMILY = '👩‍👩‍👧‍👦';
const FLAG = '🇻🇳';
const WAVE = '👋🏽';
const PIECES = ['a', ' ', 'e\u0301', 'o\u0302\u0303', FAMILY, FLAG, WAVE, '😀', '中', 'Vie\u0323\u0302t'];

describe('charCount', () => {
  it('counts code points, not UTF-16 units', () => {
    expect(charCount('abc')).toBe(3);
    expect(charCount('😀')).toBe(1);
    expect(charCount(FLAG)).toBe(2);
    expect(charCount(FAMILY)).toBe(7);
    expect(charCount(VIET)).toBe(14);
  });
});

describe('cutText', () => {
  it('keeps a text that fits, counted in code points', () => {
    const emoji = '😀'.repeat(400); // 800 UTF-16 units, 400 characters
    expect(cutText(emoji, 400)).toBe(emoji);
    expect(cutText(emoji, 399)).toBe('😀'.repeat(399));
  });

  it('never cuts inside a grapheme: tone marks, ZWJ sequences, flags, skin tones', () => {
    expect(cutText(`ab${FAMILY}c`, 8)).toBe('ab');
    expect(cutText(`ab${FAMILY}c`, 9)).toBe(`ab${FAMILY}`);
    expect(cutText(`x${FLAG}${FLAG}`, 4)).toBe(`x${FLAG}`);
    expect(cutText(VIET, 4)).toBe('Ti');
    expect(cutText(VIET, 5)).toBe('Tie\u0302\u0301');
    expect(cutText(`${WAVE}!`, 1)).toBe('');
    expect(cutText(`a${FLAG}${FLAG}`, 3, 'end')).toBe(FLAG);
    expect(cutText(`${FAMILY}ab`, 8, 'end')).toBe('ab');
  });

  it('is the longest run of whole clusters within the limit, from either end', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(...PIECES), { maxLength: 60 }),
        fc.nat(80),
        fc.constantFrom('start' as const, 'end' as const),
        (pieces, max, from) => {
          const text = pieces.join('');
          const cut = cutText(text, max, from);
          expect(charCount(cut)).toBeLessThanOrEqual(max);
          const all = clusters(text);
          const kept = clusters(cut);
          // Whole clusters of the text, taken from the chosen end...
          const part = from === 'start' ? all.slice(0, kept.length) : all.slice(all.length - kept.length);
          expect(kept).toEqual(part);
          // ...and as many as fit.
          const next = from === 'start' ? all[kept.length] : all[all.length - kept.length - 1];
          if (next !== undefined) expect(charCount(cut) + charCount(next)).toBeGreaterThan(max);
        },
      ),
    );
  });
});

describe('the limits count characters and cut between graphemes', () => {
  it('RESULT_PREVIEW_CHARS: a result of 400 emoji crosses whole; one more is cut before a whole cluster', () => {
    const fits = '😀'.repeat(limits.RESULT_PREVIEW_CHARS);
    const ok = { callId: 'c', outcome: 'ok' as const, ref: 'r1' };
    expect(previewResult({ kind: 'tool_result', ...ok, content: fits } as never, limits)).toBe(fits);
    const flags = FLAG.repeat(limits.RESULT_PREVIEW_CHARS / 2) + 'x'; // 401 characters
    const out = previewResult({ kind: 'tool_result', ...ok, content: flags } as never, limits);
    expect(out).toBe(`${FLAG.repeat(limits.RESULT_PREVIEW_CHARS / 2)} … [cut; whole result: ref:r1]`);
  });

  it('ARG_STRING_CHARS: a string of 200 emoji is replayed whole; a longer one is cut between clusters', () => {
    const whole = JSON.stringify({ q: '😀'.repeat(limits.ARG_STRING_CHARS) });
    expect(replayArguments(whole, limits.ARG_STRING_CHARS)).toBe(whole);
    const viet = 'Vie\u0323\u0302t '.repeat(40); // 280 characters, 7 a word
    const out = JSON.parse(replayArguments(JSON.stringify({ q: viet }), limits.ARG_STRING_CHARS)).q;
    expect(out).toBe(`${'Vie\u0323\u0302t '.repeat(28)}Vi… [cut: 82 more characters]`);
  });

  it('SUMMARY_PARAGRAPH_CHARS: a quoted paragraph keeps 400 characters, never half a family', () => {
    const paragraph = `xin chao ban ${FAMILY.repeat(60)}`; // 13 + 420 characters
    const [quoted] = languageSample([paragraph], limits);
    expect(quoted).toBe(`xin chao ban ${FAMILY.repeat(55)}`);
  });

  it('the review reads the end of the text shown, from a whole cluster', () => {
    const shown = `${FLAG}${'😀'.repeat(4000)}`;
    const content = String(reviewPrompt({ shown, sentence: 'ok' })[1].content);
    expect(content).toContain(`<shown>\n${'😀'.repeat(4000)}\n</shown>`);
  });
});
