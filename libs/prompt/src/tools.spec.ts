import { BUILTIN_TOOL_NAMES, TOOL_NAME_PATTERN, buildTools, mcpToolName, toolResultRef } from './tools';

describe('tools', () => {
  it('offers the built-in tools first, then the agent HTTP tools', () => {
    const tools = buildTools([
      { name: 'crm_lookup', description: 'Look up a customer.', parameters: { type: 'object' } },
    ]);
    expect(tools.map((t) => t.function.name)).toEqual([...BUILTIN_TOOL_NAMES, 'crm_lookup']);
    expect(tools.every((t) => t.type === 'function')).toBe(true);
  });

  it.each([
    ['load_skill', ['slug']],
    ['read_document', ['attachment_id']],
    ['search_attachments', ['query']],
    ['read_tool_result', ['ref']],
    ['ask_clarification', ['question']],
  ])('%s requires %j', (name, required) => {
    const tool = buildTools([]).find((t) => t.function.name === name)!;
    expect(tool.function.parameters).toMatchObject({ type: 'object', required });
  });

  it('counts pages from 1', () => {
    const read = buildTools([]).find((t) => t.function.name === 'read_document')!;
    expect(read.function.parameters).toMatchObject({ properties: { page: { type: 'integer', minimum: 1 } } });
  });

  it('refuses an HTTP tool named like another tool', () => {
    const p = { description: '', parameters: {} };
    expect(() => buildTools([{ name: 'load_skill', ...p }])).toThrow(/load_skill/);
    expect(() =>
      buildTools([
        { name: 'x', ...p },
        { name: 'x', ...p },
      ]),
    ).toThrow(/"x"/);
  });

  it.each([
    ['ref:tr_8f2c', 'tr_8f2c'],
    ['tr_8f2c', 'tr_8f2c'],
    [' ref: tr_8f2c ', 'tr_8f2c'],
  ])('reads the reference %j as %j', (input, ref) => {
    expect(toolResultRef(input)).toBe(ref);
  });

  describe('mcpToolName', () => {
    it('names an MCP tool <server>__<tool> within the provider function-name rules', () => {
      expect(mcpToolName('tickets', 'lookup', new Set())).toBe('tickets__lookup');
      const odd = mcpToolName('crm', 'contacts.search/v2 (beta)', new Set());
      expect(odd).toBe('crm__contacts_search_v2__beta_');
      const long = mcpToolName('docs', 'x'.repeat(100), new Set());
      expect(long).toMatch(TOOL_NAME_PATTERN);
      expect(long).toHaveLength(64);
    });

    it('makes a name unique among those taken', () => {
      const taken = new Set(['crm__a_b']);
      expect(mcpToolName('crm', 'a.b', taken)).toBe('crm__a_b_2');
      const full = mcpToolName('docs', 'y'.repeat(100), new Set());
      const next = mcpToolName('docs', 'y'.repeat(100), new Set([full]));
      expect(next).toMatch(TOOL_NAME_PATTERN);
      expect(next.endsWith('_2')).toBe(true);
    });
  });
});
