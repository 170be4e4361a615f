import { startGateway, type Harness } from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const newAgent = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: `Agent ${id}`,
  model: 'seeing',
  ...extra,
});

describe('agents', () => {
  it('lets every member list and read the org agents, with bound skills by slug', async () => {
    const list = await gw.call('GET', '/v1/agents', { as: 'bob' });
    expect(list.status).toBe(200);
    expect(list.body.map((a: { id: string }) => a.id)).toEqual(['blind', 'researcher']);
    const one = await gw.call('GET', '/v1/agents/researcher', { as: 'bob' });
    expect(one.body).toEqual({
      id: 'researcher',
      name: 'Researcher',
      instructions: 'Research carefully.',
      model: 'seeing',
      effort: 'medium',
      skills: ['fact-check', 'style-guide', 'secret', 'retired', 'draft'],
      tools: [],
      mcpServers: [],
      compactionGuidance: null,
      reviewer: null,
    });
  });

  it('lets authors and admins create agents with defaults', async () => {
    const created = await gw.call('POST', '/v1/agents', {
      as: 'alice',
      body: newAgent('writer', {
        skills: ['style-guide', 'fact-check'],
        tools: [
          {
            name: 'lookup',
            description: 'Look it up',
            parameters: { type: 'object' },
            url: 'https://tools.example.com/lookup',
          },
        ],
      }),
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: 'writer',
      instructions: '',
      effort: 'medium',
      skills: ['style-guide', 'fact-check'],
      tools: [{ name: 'lookup', requiresApproval: false }],
      reviewer: null,
    });
    expect((await gw.call('POST', '/v1/agents', { as: 'carol', body: newAgent('admin-made') })).status).toBe(
      201,
    );
    expect((await gw.call('GET', '/v1/agents/writer', { as: 'bob' })).body.skills).toEqual([
      'style-guide',
      'fact-check',
    ]);
  });

  it('refuses members 403 forbidden', async () => {
    const create = await gw.call('POST', '/v1/agents', { as: 'bob', body: newAgent('nope') });
    expect(create.status).toBe(403);
    expect(create.body.error.code).toBe('forbidden');
    const patch = await gw.call('PATCH', '/v1/agents/researcher', { as: 'bob', body: { name: 'X' } });
    expect(patch.status).toBe(403);
    expect((await gw.call('GET', '/v1/agents/nope', { as: 'alice' })).status).toBe(404);
  });

  it.each([
    [
      'an unknown model',
      newAgent('a1', { model: 'gpt-99' }),
      /^model: "gpt-99" is not in the model catalogue/,
    ],
    ['an unknown reviewer', newAgent('a2', { reviewer: 'gpt-99' }), /^reviewer: /],
    [
      'a tool URL outside the allow-list',
      newAgent('a3', {
        tools: [{ name: 't', description: '', parameters: {}, url: 'https://tools.example.com.evil.net/x' }],
      }),
      /^tools\[0\]\.url: tool "t": .* matches no PORTAL_TOOL_URL_ALLOW prefix/,
    ],
    [
      'a tool named like a built-in one',
      newAgent('a4', {
        tools: [{ name: 'load_skill', description: '', parameters: {}, url: 'https://tools.example.com/x' }],
      }),
      /^tools\[0\]\.name: /,
    ],
    [
      'an MCP server URL outside the allow-list',
      newAgent('a8', { mcpServers: [{ name: 'crm', url: 'https://crm.example.com/mcp' }] }),
      /^mcpServers\[0\]\.url: MCP server "crm": .* matches no PORTAL_TOOL_URL_ALLOW prefix/,
    ],
    [
      'an MCP server name holding "__"',
      newAgent('a9', { mcpServers: [{ name: 'a__b', url: 'https://tools.example.com/mcp' }] }),
      /^mcpServers\[0\]\.name: /,
    ],
    [
      'a headersFromEnv value that is no env var name',
      newAgent('a10', {
        mcpServers: [
          {
            name: 'crm',
            url: 'https://tools.example.com/mcp',
            headersFromEnv: { Authorization: 'Bearer x' },
          },
        ],
      }),
      /^mcpServers\[0\]\.headersFromEnv/,
    ],
    ['a skill of nobody', newAgent('a5', { skills: ['nope'] }), /^skills\[0\]: no skill "nope"/],
    [
      "another user's private skill",
      newAgent('a6', { skills: ['secret'] }),
      /^skills\[0\]: no skill "secret"/,
    ],
    ['a bad effort', newAgent('a7', { effort: 'max' }), /^effort: /],
    ['a bad id', newAgent('has space'), /^id: /],
  ])('refuses %s with 400 validation_failed naming the field', async (_, body, message) => {
    const res = await gw.call('POST', '/v1/agents', { as: 'alice', body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.message).toMatch(message);
  });

  it('stores MCP servers as given and checks their URL again on change', async () => {
    const server = {
      name: 'tickets',
      url: 'https://tools.example.com/mcp',
      headersFromEnv: { Authorization: 'TICKETS_TOKEN' },
      tools: ['lookup', 'delete_ticket'],
      requiresApproval: ['delete_ticket'],
    };
    const created = await gw.call('POST', '/v1/agents', {
      as: 'alice',
      body: newAgent('helpdesk', { mcpServers: [server] }),
    });
    expect(created.status).toBe(201);
    expect((await gw.call('GET', '/v1/agents/helpdesk', { as: 'bob' })).body.mcpServers).toEqual([server]);
    const bad = await gw.call('PATCH', '/v1/agents/helpdesk', {
      as: 'alice',
      body: { mcpServers: [{ ...server, url: 'https://elsewhere.example.com/mcp' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^mcpServers\[0\]\.url: /);
    expect((await gw.call('GET', '/v1/agents/helpdesk')).body.mcpServers).toEqual([server]);
  });

  it('refuses an id the org already uses with 409 conflict, changing nothing', async () => {
    const res = await gw.call('POST', '/v1/agents', { as: 'alice', body: newAgent('researcher') });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('conflict');
    expect((await gw.call('GET', '/v1/agents/researcher')).body.name).toBe('Researcher');
  });

  it('patches only the fields given', async () => {
    await gw.call('POST', '/v1/agents', {
      as: 'alice',
      body: newAgent('patchable', { skills: ['fact-check'] }),
    });
    const res = await gw.call('PATCH', '/v1/agents/patchable', {
      as: 'carol',
      body: { effort: 'high', instructions: 'New.', model: 'blind' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: 'patchable',
      name: 'Agent patchable',
      effort: 'high',
      instructions: 'New.',
      model: 'blind',
      skills: ['fact-check'],
    });
    const skills = await gw.call('PATCH', '/v1/agents/patchable', { body: { skills: [] } });
    expect(skills.body.skills).toEqual([]);
    const bad = await gw.call('PATCH', '/v1/agents/patchable', { body: { model: 'gpt-99' } });
    expect(bad.status).toBe(400);
    const renamed = await gw.call('PATCH', '/v1/agents/patchable', { body: { id: 'other' } });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error.message).toMatch(/^id: /);
  });
});
