import { SentenceGate } from './sentence-gate.util';

/** Pushes the deltas; each entry is what one push (or the end) released. */
function gate(deltas: string[]): string[][] {
  const g = new SentenceGate();
  return [...deltas.map((d) => g.push(d)), g.end()];
}

const released = (deltas: string[]) => gate(deltas).flat();

describe('SentenceGate', () => {
  it('releases an English sentence once the next one begins, and the last at the end', () => {
    expect(gate(['Hello', ' there. How are', ' you? Fine. Bye'])).toEqual([
      [],
      ['Hello there. '],
      ['How are you? ', 'Fine. '],
      ['Bye'],
    ]);
  });

  it('cuts Vietnamese sentences the same way', () => {
    expect(released(['Xin chào. Bạn khỏe không? ', 'Tôi khỏe, cảm ơn!'])).toEqual([
      'Xin chào. ',
      'Bạn khỏe không? ',
      'Tôi khỏe, cảm ơn!',
    ]);
  });

  it('holds text without final punctuation until the end', () => {
    expect(gate(['No final', ' punctuation here'])).toEqual([[], [], ['No final punctuation here']]);
    expect(released(['Done. And then'])).toEqual(['Done. ', 'And then']);
  });

  it('never releases a sentence before it is complete, whatever the deltas', () => {
    const text = 'Câu một có dấu thanh. Câu hai 👍🏽 xong! Mr. Smith said 3.5 is fine. Last one';
    const whole = released([text]);
    expect(whole).toEqual([
      'Câu một có dấu thanh. ',
      'Câu hai 👍🏽 xong! ',
      'Mr. ',
      'Smith said 3.5 is fine. ',
      'Last one',
    ]);
    // One UTF-16 unit at a time: surrogate pairs and skin-tone modifiers arrive split.
    expect(released(text.split(''))).toEqual(whole);
    // Decomposed tone marks (base letter and combining mark in separate deltas).
    const decomposed = text.normalize('NFD');
    expect(released(Array.from(decomposed))).toEqual(whole.map((s) => s.normalize('NFD')));
    expect(released(decomposed.split(/(?=\u0300|\u0301|\u0303|\u0309|\u0323)/))).toEqual(
      whole.map((s) => s.normalize('NFD')),
    );
  });

  it('releases exactly the text pushed', () => {
    const deltas = ['Line one\n', '\n1. ', 'First\n2. Sec', 'ond  ', '\n'];
    expect(released(deltas).join('')).toBe(deltas.join(''));
  });

  it('sends a segment without a letter out with the next sentence', () => {
    expect(released(['Steps:\n1. Open it.\n2. Close it.'])).toEqual([
      'Steps:\n',
      '1. Open it.\n',
      '2. Close it.',
    ]);
  });

  it('releases nothing for no text', () => {
    expect(gate([''])).toEqual([[], []]);
  });
});
