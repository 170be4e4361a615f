import { parseCatalogue } from '@portal/model';
import { MODELS_YAML, STANDARD_BOOTSTRAP, tempFile } from '../../test/gateway-harness.util';
import { BootstrapError, newApiKey, readBootstrapFile } from './bootstrap-file.util';

const rules = {
  catalogue: parseCatalogue(MODELS_YAML, 'test'),
  toolUrlAllow: ['https://tools.example.com/'],
};

function problemsOf(doc: unknown, name = 'bootstrap.json'): string {
  const file = tempFile(name, typeof doc === 'string' ? doc : JSON.stringify(doc));
  try {
    readBootstrapFile(file, rules);
  } catch (err) {
    expect(err).toBeInstanceOf(BootstrapError);
    const message = (err as Error).message;
    expect(message.startsWith(`PORTAL_BOOTSTRAP_FILE ${file}:`)).toBe(true);
    return message;
  }
  throw new Error('the file was accepted');
}

/** The standard file with `change` applied to a deep copy. */
function withChange(change: (doc: any) => void): unknown {
  const doc = structuredClone(STANDARD_BOOTSTRAP);
  change(doc);
  return doc;
}

describe('readBootstrapFile', () => {
  it('reads JSON and YAML, filling in the defaults', () => {
    const json = readBootstrapFile(tempFile('b.json', JSON.stringify(STANDARD_BOOTSTRAP)), rules);
    expect(json.orgs[0].agents[1]).toEqual({
      id: 'blind',
      name: 'Blind',
      instructions: '',
      model: 'blind',
      effort: 'low',
      skills: [],
      tools: [],
      mcpServers: [],
      compactionGuidance: null,
      reviewer: null,
    });
    const yaml = readBootstrapFile(
      tempFile(
        'b.yaml',
        `orgs:
  - id: acme
    users:
      - { id: alice, role: author, apiKey: "pk_alice_123" }
    skills:
      - { slug: fact-check, name: Fact check, description: "Check claims.", instructions: "...", owner: alice }
    agents:
      - { id: researcher, name: Researcher, model: seeing, skills: [fact-check], reviewer: blind }
`,
      ),
      rules,
    );
    expect(yaml.orgs[0].skills[0]).toMatchObject({
      visibility: 'org',
      status: 'active',
      published: false,
      owner: 'alice',
    });
    expect(yaml.orgs[0].agents[0]).toMatchObject({
      skills: ['fact-check'],
      reviewer: 'blind',
      effort: 'medium',
    });
  });

  it('names the agent and the tool whose URL is not allowed', () => {
    const message = problemsOf(
      withChange((doc) => {
        doc.orgs[0].agents[0].tools = [
          { name: 'crm', description: 'CRM', parameters: {}, url: 'https://evil.example.com/crm' },
        ];
      }),
    );
    expect(message).toContain(
      'orgs[0].agents[0] (researcher).tools[0].url: tool "crm": https://evil.example.com/crm matches no PORTAL_TOOL_URL_ALLOW prefix',
    );
  });

  it('reads MCP servers and names the one whose URL is not allowed', () => {
    const server = {
      name: 'tickets',
      url: 'https://tools.example.com/mcp',
      headersFromEnv: { Authorization: 'TICKETS_TOKEN' },
      tools: ['lookup'],
      requiresApproval: ['delete_ticket'],
    };
    const file = tempFile(
      'mcp.json',
      JSON.stringify(withChange((doc) => (doc.orgs[0].agents[0].mcpServers = [server]))),
    );
    expect(readBootstrapFile(file, rules).orgs[0].agents[0].mcpServers).toEqual([server]);
    const message = problemsOf(
      withChange((doc) => {
        doc.orgs[0].agents[0].mcpServers = [{ ...server, url: 'https://evil.example.com/mcp' }];
      }),
    );
    expect(message).toContain(
      'orgs[0].agents[0] (researcher).mcpServers[0].url: MCP server "tickets": https://evil.example.com/mcp matches no PORTAL_TOOL_URL_ALLOW prefix',
    );
  });

  it.each<[string, (doc: any) => void, string]>([
    [
      'an unknown model',
      (d) => (d.orgs[0].agents[0].model = 'gpt-99'),
      'orgs[0].agents[0] (researcher).model: "gpt-99" is not in the model catalogue',
    ],
    [
      'an unknown reviewer',
      (d) => (d.orgs[0].agents[1].reviewer = 'gpt-99'),
      'orgs[0].agents[1] (blind).reviewer: "gpt-99"',
    ],
    [
      'a skill of no one',
      (d) => (d.orgs[0].agents[1].skills = ['nope']),
      'orgs[0].agents[1] (blind).skills[0]: no skill "nope" in org acme',
    ],
    [
      'an owner who is not a user',
      (d) => (d.orgs[0].skills[0].owner = 'zed'),
      'orgs[0].skills[0] (fact-check).owner: "zed" is not a user of org acme',
    ],
    [
      'a private skill without owner',
      (d) => Object.assign(d.orgs[0].skills[0], { visibility: 'private', owner: null }),
      'a private skill needs an owner',
    ],
    [
      'a user listed twice',
      (d) => d.orgs[0].users.push({ id: 'alice', role: 'member', apiKey: 'pk_other_1234' }),
      'orgs[0].users[4].id: user "alice" is listed twice',
    ],
    [
      'a key given twice',
      (d) => (d.orgs[1].users[0].apiKey = d.orgs[0].users[0].apiKey),
      'orgs[1].users[0].apiKey: the same key is given to acme/alice',
    ],
    [
      'an unknown field',
      (d) => (d.orgs[0].agents[0].temperature = 2),
      'orgs[0].agents[0] (temperature): Unrecognized key',
    ],
    ['a bad role', (d) => (d.orgs[0].users[0].role = 'owner'), 'orgs[0].users[0].role:'],
    ['a bad slug', (d) => (d.orgs[0].skills[0].slug = 'Fact Check'), 'orgs[0].skills[0].slug:'],
    ['an empty portal floor', (d) => (d.portalFloor = '  '), 'portalFloor: must be non-empty text'],
    ['no orgs', (d) => (d.orgs = []), 'orgs:'],
  ])('refuses %s, naming the file and the field', (_, change, expected) => {
    expect(problemsOf(withChange(change))).toContain(expected);
  });

  it('never repeats an API key in its messages', () => {
    const message = problemsOf(withChange((d) => (d.orgs[0].users[0].apiKey = 'secret-but-malformed')));
    expect(message).toContain('orgs[0].users[0].apiKey: must look like pk_');
    expect(message).not.toContain('secret-but-malformed');
  });

  it('lists every problem at once', () => {
    const message = problemsOf(
      withChange((d) => {
        d.orgs[0].agents[0].model = 'gpt-99';
        d.orgs[1].agents[0].model = 'gpt-98';
      }),
    );
    expect(message).toContain('gpt-99');
    expect(message).toContain('gpt-98');
  });

  it('refuses an unreadable or malformed file', () => {
    expect(() => readBootstrapFile('/nonexistent/bootstrap.yaml', rules)).toThrow(
      /^PORTAL_BOOTSTRAP_FILE \/nonexistent\/bootstrap.yaml:\n {2}- cannot read it/,
    );
    expect(problemsOf('{ "orgs": [', 'broken.json')).toContain('not valid JSON or YAML');
  });

  it('makes API keys that look like pk_… and never repeat', () => {
    const keys = new Set(Array.from({ length: 50 }, newApiKey));
    expect(keys.size).toBe(50);
    for (const key of keys) expect(key).toMatch(/^pk_[A-Za-z0-9_-]{32}$/);
  });
});

describe('an org identity provider (oidc)', () => {
  const oidc = (extra: Record<string, unknown> = {}) =>
    withChange((doc) => {
      doc.orgs[0].oidc = { issuer: 'https://login.example.com/realms/acme', clientId: 'portal', ...extra };
    });

  it('is read with its defaults, and its secret from the env var it names', () => {
    const file = tempFile('b.json', JSON.stringify(oidc({ clientSecretEnv: 'ACME_OIDC_SECRET' })));
    const doc = readBootstrapFile(file, { ...rules, env: { ACME_OIDC_SECRET: 's3cret' } });
    expect(doc.orgs[0].oidc).toEqual({
      issuer: 'https://login.example.com/realms/acme',
      clientId: 'portal',
      clientSecretEnv: 'ACME_OIDC_SECRET',
      defaultRole: 'member',
    });
  });

  it('refuses plain http but on localhost, an unset secret variable, an unknown role or field', () => {
    expect(problemsOf(oidc({ issuer: 'http://login.example.com' }))).toContain(
      'orgs[0].oidc.issuer: must be an https URL (plain http only for a provider on localhost)',
    );
    expect(() =>
      readBootstrapFile(tempFile('b.json', JSON.stringify(oidc({ issuer: 'http://127.0.0.1:8080' }))), rules),
    ).not.toThrow();
    expect(problemsOf(oidc({ clientSecretEnv: 'ACME_OIDC_SECRET' }))).toContain(
      'orgs[0].oidc.clientSecretEnv: ACME_OIDC_SECRET is not set',
    );
    expect(problemsOf(oidc({ defaultRole: 'owner' }))).toContain('orgs[0].oidc.defaultRole');
    expect(problemsOf(oidc({ clientSecret: 'inline' }))).toContain('orgs[0].oidc (clientSecret)');
  });
});
