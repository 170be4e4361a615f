const SENTENCES = new Intl.Segmenter(undefined, { granularity: 'sentence' });
const LETTER = /\p{L}/u;

/**
 * Cuts streamed text into sentences for the output guardrail (SPEC 3), with `Intl.Segmenter`. A
 * sentence is released once the text goes on past it (another segment follows) or the text ends,
 * so a delta cut mid-sentence or mid-grapheme never splits one. A segment without a letter (a list
 * number, a blank line) goes out with the sentence after it. What is released adds up to exactly
 * the text pushed.
 */
export class SentenceGate {
  private pending = '';

  /** The sentences this text completes. */
  push(text: string): string[] {
    this.pending += text;
    const segments = Array.from(SENTENCES.segment(this.pending), (s) => s.segment);
    const sentences: string[] = [];
    let sentence = '';
    for (const segment of segments.slice(0, -1)) {
      sentence += segment;
      if (LETTER.test(segment)) {
        sentences.push(sentence);
        sentence = '';
      }
    }
    this.pending = sentence + (segments.at(-1) ?? '');
    return sentences;
  }

  /** The text has ended: what is left, as the last sentence. */
  end(): string[] {
    const rest = this.pending;
    this.pending = '';
    return rest === '' ? [] : [rest];
  }
}
