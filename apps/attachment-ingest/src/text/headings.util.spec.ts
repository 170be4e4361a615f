import { sourcePage } from '@portal/dal/testing';
import { heuristicHeadings, markdownHeadings, textHeadings } from './headings.util';

describe('markdownHeadings', () => {
  it('reads ATX and setext headings, not what sits in a code fence', () => {
    const text = [
      '# Dựng prompt',
      'Intro text.',
      '## Quy tắc chính ##',
      '```md',
      '# not a heading',
      '```',
      'Tệp đính kèm',
      '============',
      '#hashtag is not a heading',
      '###   Spaced   out   ',
    ].join('\n');
    expect(markdownHeadings(text, 20)).toEqual([
      'Dựng prompt',
      'Quy tắc chính',
      'Tệp đính kèm',
      'Spaced out',
    ]);
  });

  it('keeps the first `max`', () => {
    const text = Array.from({ length: 30 }, (_, i) => `## Section ${i + 1}\nbody`).join('\n');
    const headings = markdownHeadings(text, 20);
    expect(headings).toHaveLength(20);
    expect(headings[19]).toBe('Section 20');
  });
});

describe('heuristicHeadings', () => {
  it('finds the section titles of plain text and not its sentences, list items or table rows', () => {
    const text = [
      'REPORT ON THE THIRD QUARTER',
      '',
      '1. Introduction',
      '',
      'This report covers the quarter. It was a good quarter for every team in the company.',
      '',
      'Results by region',
      '- North grew by 4%',
      '| Region | Growth |',
      'Outlook',
      'We expect the next quarter to be as good as this one, or better, if the market holds.',
      'the end',
    ].join('\n');
    expect(heuristicHeadings(text, 20)).toEqual([
      'REPORT ON THE THIRD QUARTER',
      '1. Introduction',
      'Results by region',
      'Outlook',
    ]);
  });

  it('does not take the lines of a hard-wrapped paragraph for headings', () => {
    const text = [
      'The committee met on Monday and agreed that the budget',
      'for the coming year should stay as it was, with one change',
      'to the travel line.',
    ].join('\n');
    expect(heuristicHeadings(text, 20)).toEqual([]);
  });

  it('finds the headings of the Vietnamese seed page', () => {
    const headings = textHeadings(sourcePage('vi'), 20);
    expect(headings.slice(0, 4)).toEqual(['Dựng prompt', 'Quy tắc chính', 'Ghép lượt', 'Mức suy luận']);
    expect(headings).toContain('Bộ nhớ ngắn hạn');
    expect(headings).toContain('Nén ngữ cảnh');
    expect(headings.length).toBeLessThanOrEqual(20);
    for (const h of headings) expect(h).not.toMatch(/^[-|]/);
  });
  it('leaves out tab-separated table rows (the English seed page)', () => {
    const headings = textHeadings(sourcePage('en'), 20);
    expect(headings).toEqual(
      expect.arrayContaining(['Key rules', 'Short-term memory', 'Context compaction']),
    );
    expect(headings).not.toContain('Bound Value');
  });
});

describe('textHeadings', () => {
  it('prefers markdown headings and falls back to the heuristics', () => {
    expect(textHeadings('# Title\nSome Line\n\nbody', 20)).toEqual(['Title']);
    expect(textHeadings('Title\n\nThe body of the text, which is a sentence.', 20)).toEqual(['Title']);
  });
});
