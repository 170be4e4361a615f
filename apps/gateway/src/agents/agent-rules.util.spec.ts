import { isToolUrlAllowed } from './agent-rules.util';

describe('isToolUrlAllowed', () => {
  const allow = ['https://tools.example.com', 'https://api.example.org/v1/'];

  it.each([
    ['https://tools.example.com', true],
    ['https://tools.example.com/crm?q=1', true],
    ['https://api.example.org/v1/search', true],
    ['https://tools.example.com.evil.net/crm', false],
    ['https://tools.example.com@evil.net/', false],
    ['https://api.example.org/v2/search', false],
    ['http://tools.example.com/crm', false],
  ])('%s → %s', (url, allowed) => {
    expect(isToolUrlAllowed(url, allow)).toBe(allowed);
  });

  it('allows nothing without an allow-list', () => {
    expect(isToolUrlAllowed('https://tools.example.com/x', [])).toBe(false);
  });
});
