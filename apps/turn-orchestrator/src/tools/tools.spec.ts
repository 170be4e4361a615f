import { isAllowedToolUrl } from './http.tool';
import { parseToolArguments, stringsArg } from './tool-args.util';

describe('isAllowedToolUrl', () => {
  const allow = ['https://api.example.com/tools/', 'http://127.0.0.1:8080'];

  it.each([
    ['https://api.example.com/tools/crm', true],
    ['http://127.0.0.1:8080/anything', true],
    ['https://api.example.com/admin', false],
    ['https://api.example.com.evil.org/tools/crm', false],
    ['http://api.example.com/tools/crm', false],
    ['https://user:pw@api.example.com/tools/crm', false],
    ['http://127.0.0.1:9090/x', false],
    ['not a url', false],
  ])('%s → %s', (url, allowed) => {
    expect(isAllowedToolUrl(url, allow)).toBe(allowed);
  });

  it('allows nothing with an empty list', () => {
    expect(isAllowedToolUrl('https://api.example.com/tools/crm', [])).toBe(false);
  });
});

describe('parseToolArguments', () => {
  it('reads a JSON object, and empty text as no arguments', () => {
    expect(parseToolArguments('{"slug":"a"}')).toEqual({ args: { slug: 'a' } });
    expect(parseToolArguments('  ')).toEqual({ args: {} });
  });

  it('says when the arguments are not valid JSON or not an object', () => {
    expect(parseToolArguments('{"slug": ')).toEqual({ error: expect.stringMatching(/not valid JSON/) });
    expect(parseToolArguments('[1]')).toEqual({ error: expect.stringMatching(/object was expected/) });
  });
});

describe('argument readers', () => {
  it('check types', () => {
    expect(stringsArg({}, 'options')).toEqual([]);
    expect(stringsArg({ options: ['a', 2] }, 'options')).toBeNull();
  });
});
