import { createGraphemeBuffer, splitGraphemes } from './graphemes';

const VIETNAMESE = 'Tiếng Việt có dấu: người, đường, nghiêng, chuyện.';
const EMOJI = 'Team 👩🏽‍💻👨‍👩‍👧‍👦 ok 👍🏿 flag 🇻🇳🇯🇵 keycap 1️⃣ end';

/** Feeds `text` in pieces of `size` UTF-16 code units, so pieces split surrogates and clusters. */
function feed(text: string, size: number): string[] {
  const buffer = createGraphemeBuffer();
  for (let i = 0; i < text.length; i += size) buffer.push(text.slice(i, i + size));
  buffer.close();
  return [...buffer.clusters];
}

describe('graphemes', () => {
  it('cuts tone marks and emoji sequences as one cluster each', () => {
    expect(splitGraphemes('ệ👩🏽‍💻🇻🇳')).toEqual(['ệ', '👩🏽‍💻', '🇻🇳']);
    // Decomposed: a letter and two combining marks are still one cluster.
    expect(splitGraphemes('ệ'.normalize('NFD'))).toHaveLength(1);
  });

  it.each([1, 2, 3, 5, 7])('gives the same clusters whatever the piece size (%i)', (size) => {
    for (const text of [VIETNAMESE, VIETNAMESE.normalize('NFD'), EMOJI]) {
      expect(feed(text, size)).toEqual(splitGraphemes(text));
    }
  });

  it('keeps the last cluster open until more text or close', () => {
    const buffer = createGraphemeBuffer();
    buffer.push('chà'.normalize('NFD').slice(0, 3)); // "cha" without its grave accent
    expect(buffer.clusters).toEqual(['c', 'h']);
    buffer.push('\u0300');
    expect(buffer.clusters).toEqual(['c', 'h']);
    buffer.push('👩');
    expect(buffer.clusters.join('')).toBe('chà'.normalize('NFD'));
    buffer.push('\u200d💻'); // the woman becomes a technologist, not a second person
    buffer.close();
    expect(buffer.clusters.at(-1)).toBe('👩‍💻');
  });
});
