import { cleanTitle, titlePrompt, TITLE_MAX_CHARS } from './title';

describe('titlePrompt', () => {
  it('quotes the request without its leading slugs and the answer, then asks for the title', () => {
    const messages = titlePrompt({ request: '/fact-check How did Q3 go?', answer: 'Revenue rose 4%.' });
    expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(messages[0].content).toMatch(/short title/);
    expect(messages[1].content).toBe('How did Q3 go?');
    expect(messages[2].content).toBe('Revenue rose 4%.');
    expect(messages[3].content).toMatch(/title only/);
  });

  it('leaves the answer out when the turn wrote none', () => {
    expect(titlePrompt({ request: 'Hello', answer: ' ' }).map((m) => m.role)).toEqual([
      'system',
      'user',
      'user',
    ]);
  });
});

describe('cleanTitle', () => {
  it.each([
    ['"Q3 revenue review".', 'Q3 revenue review'],
    ['Title: Báo cáo quý ba', 'Báo cáo quý ba'],
    ['\n\n  **Trip to Hanoi**\nmore', 'Trip to Hanoi'],
    ['  ', null],
  ])('%j gives %j', (reply, title) => {
    expect(cleanTitle(reply)).toBe(title);
  });

  it('cuts a long reply', () => {
    expect(cleanTitle('x'.repeat(200))).toHaveLength(TITLE_MAX_CHARS);
  });
});
