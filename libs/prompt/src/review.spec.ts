import { readVerdict, REVIEW_CONTEXT_CHARS, REVIEW_REASON_CHARS, reviewPrompt } from './review';

describe('reviewPrompt', () => {
  it('asks for exactly PASS or BLOCK, quoting what was shown and the sentence', () => {
    const messages = reviewPrompt({ shown: 'Hello. ', sentence: 'The key is 42.' });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0].content).toMatch(/exactly `PASS`, or `BLOCK: <reason>`/);
    expect(messages[1].content).toBe(
      'Already shown:\n<shown>\nHello. \n</shown>\n\nSentence to review:\n<sentence>\nThe key is 42.\n</sentence>',
    );
  });

  it('reads only the last REVIEW_CONTEXT_CHARS characters shown, from a whole cluster', () => {
    const shownOf = (shown: string) =>
      /<shown>\n([^]*)\n<\/shown>/.exec(reviewPrompt({ shown, sentence: 'Next.' })[1].content as string)![1];
    const x = 'x'.repeat(REVIEW_CONTEXT_CHARS);
    expect(shownOf('Earlier. ' + x)).toBe(x);
    // Characters are code points: an emoji counts one.
    expect(shownOf('😀'.repeat(REVIEW_CONTEXT_CHARS) + 'y')).toBe(
      '😀'.repeat(REVIEW_CONTEXT_CHARS - 1) + 'y',
    );
  });
});

describe('readVerdict', () => {
  it('passes only on PASS', () => {
    expect(readVerdict('PASS')).toEqual({ pass: true });
    expect(readVerdict('  PASS\n')).toEqual({ pass: true });
  });

  it('blocks with the reason given', () => {
    expect(readVerdict('BLOCK: leaks a password')).toEqual({ pass: false, reason: 'leaks a password' });
    expect(readVerdict('BLOCK:\n  two\n lines ')).toEqual({ pass: false, reason: 'two lines' });
    expect(readVerdict('BLOCK:')).toEqual({ pass: false, reason: 'no reason given' });
    expect(readVerdict(`BLOCK: ${'r'.repeat(500)}`)).toEqual({
      pass: false,
      reason: 'r'.repeat(REVIEW_REASON_CHARS),
    });
  });

  it('fails closed on anything else', () => {
    for (const reply of ['', 'pass', 'PASS.', 'PASS, it is fine', 'Looks fine to me', 'block: x']) {
      expect(readVerdict(reply)).toEqual({
        pass: false,
        reason: expect.stringMatching(/^unreadable review answer "/),
      });
    }
  });
});
