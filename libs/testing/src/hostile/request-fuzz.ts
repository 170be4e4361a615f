import fc from 'fast-check';

/** One request of the fuzzer, sent as it is (path already encoded, body already serialised). */
export interface FuzzCase {
  /** `METHOD /route` of the endpoint it aims at (API.md), for the tables. */
  endpoint: string;
  /** What was done to the request. */
  mutation: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
}

/** Ids the fuzzer puts in paths: the caller's own, and ones of another org. */
export interface FuzzTargets {
  conversationId: string;
  /** Where messages are posted (a conversation whose turn is not paused); default conversationId. */
  messageConversationId?: string;
  turnId: string;
  blockId: string;
  agentId: string;
  skillId: string;
  attachmentId: string;
  otherOrg: {
    conversationId: string;
    turnId: string;
    agentId: string;
    skillId: string;
    attachmentId: string;
  };
}

/** Strings that have broken Unicode handling somewhere (JSON escapes them as needed). */
export const UNICODE_EDGE_STRINGS: readonly string[] = [
  '\ud800',
  'a\udfffb',
  '\udbff',
  '\u202eevil\u202c',
  '\u200f\u200e\u061c',
  '\u2067isolate\u2069',
  '👩\u200d👩\u200d👧\u200d👦',
  '\u200b\u200c\u200d\ufeff',
  'e\u0301',
  '\u00e9',
  'Tiếng Việt có dấu'.normalize('NFC'),
  'Tiếng Việt có dấu'.normalize('NFD'),
  'Người ướt ở Huế ỗ ẵ ậ'.normalize('NFD'),
  `Z${'\u0301\u0316\u0323'.repeat(300)}`,
  '\u0000',
  'nul\u0000inside',
  '\u2028\u2029\u0085',
  '\uffff\ufffe\ufdd0',
  '\u{10ffff}\u{1fffe}',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  '\u0130\u0131ß\u01c5',
  '\u1160\u3164',
  ' ',
  '\t\r\n',
  '\u00a0\u3000',
  '%00%ff%2e%2e',
  "' OR '1'='1' --",
  '{{7*7}}${7*7}<script>alert(1)</script>',
  '../../../../etc/passwd',
];

/** Values of the wrong type (or shape) for any field. */
const WRONG_VALUES: readonly [string, unknown][] = [
  ['null', null],
  ['zero', 0],
  ['negative', -1],
  ['float', 1.5],
  ['huge-number', 1e308],
  ['true', true],
  ['empty-string', ''],
  ['array', ['x']],
  ['empty-array', []],
  ['object', { a: 1 }],
  ['string-300k', 'x'.repeat(300_000)],
];

/** Path segments that are not a valid id, or are another org's. */
function badIds(own: string, other: string): [string, string][] {
  return [
    ['empty', ''],
    ['blank', '%20'],
    ['dot-dot', '..'],
    ['encoded-dot-dot', '%2e%2e'],
    ['encoded-slash', 'a%2Fb'],
    ['nul', '%00'],
    ['invalid-utf8', '%ff%fe'],
    ['lone-surrogate', '%ED%A0%80'],
    ['rtl-override', '%E2%80%AE'],
    ['emoji', encodeURIComponent('👩‍👩‍👧')],
    ['long-10k', 'a'.repeat(10_000)],
    ['nil-uuid', '00000000-0000-0000-0000-000000000000'],
    ['random-uuid', '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d'],
    ['uuid-like-bad', '00000000-0000-0000-0000-00000000000g'],
    ['uuid-upper', own.toUpperCase()],
    ['uuid-braced', `%7B${own}%7D`],
    ['uuid-trailing', `${own}x`],
    ['sql', encodeURIComponent("' OR '1'='1")],
    ['other-org', other],
    ['number', '12345'],
  ];
}

const JSON_TYPE = { 'content-type': 'application/json' };

function jsonCase(endpoint: string, mutation: string, method: string, path: string, body: unknown): FuzzCase {
  return { endpoint, mutation, method, path, headers: { ...JSON_TYPE }, body: JSON.stringify(body) };
}

/** Bodies that are not a JSON object at all, or not JSON. */
const RAW_BODIES: readonly [string, string][] = [
  ['array', '[]'],
  ['string', '"text"'],
  ['number', '42'],
  ['null', 'null'],
  ['true', 'true'],
  ['truncated', '{"text": "hi'],
  ['trailing', '{"text": "hi"}}'],
  ['single-quotes', "{'text': 'hi'}"],
  ['comments', '{/* c */ "text": "hi"}'],
  ['nan', '{"text": NaN}'],
  ['bom', '\ufeff{"text": "hi"}'],
  ['nul-byte', '{"text": "hi"}\u0000'],
  ['duplicate-keys', '{"text": "a", "text": "b"}'],
  ['proto', '{"__proto__": {"polluted": true}, "text": "hi"}'],
  ['constructor-prototype', '{"constructor": {"prototype": {"polluted": true}}, "text": "hi"}'],
  ['deep-array-100k', `${'['.repeat(100_000)}${']'.repeat(100_000)}`],
  ['deep-object-20k', `${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}`],
  ['huge-2mb', JSON.stringify({ text: 'x'.repeat(2 * 1024 * 1024) })],
];

const CONTENT_TYPES: readonly string[] = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'application/json; charset=utf-16',
  'application/jsonp',
  'application/json, text/plain',
  'APPLICATION/JSON',
  '',
];

const AUTH_HEADERS: readonly [string, string | null][] = [
  ['none', null],
  ['bearer-only', 'Bearer'],
  ['bearer-blank', 'Bearer    '],
  ['basic', 'Basic YWxpY2U6c2VjcmV0'],
  ['two-keys', 'Bearer pk_a pk_b'],
  ['wrong-key', 'Bearer pk_not_a_key'],
  ['long-key', `Bearer pk_${'k'.repeat(8000)}`],
  ['token-prefix', 'Token pk_whatever'],
];

export interface FuzzOptions {
  seed?: number;
  /** fast-check generated bodies per body endpoint. */
  generatedPerEndpoint?: number;
}

/**
 * The request fuzzer's cases over every endpoint of API.md: each body field missing, of a wrong
 * type, or an edge-case Unicode string; extra fields (prototype pollution included); bodies that
 * are not objects, not JSON, deep or huge; bad, uuid-like and other-org ids in every path; bad
 * Last-Event-IDs; wrong content types; wrong methods; broken Authorization headers; malformed
 * multipart uploads; then `generatedPerEndpoint` bodies from fast-check per body endpoint. The
 * same targets and options always give the same cases.
 */
export function requestFuzzCases(t: FuzzTargets, options: FuzzOptions = {}): FuzzCase[] {
  const seed = options.seed ?? 4242;
  const cases: FuzzCase[] = [];
  const conv = `/v1/conversations/${t.conversationId}`;
  const bodyEndpoints: { endpoint: string; method: string; path: string; valid: Record<string, unknown> }[] =
    [
      {
        endpoint: 'POST /v1/agents',
        method: 'POST',
        path: '/v1/agents',
        valid: {
          id: 'fuzz-agent',
          name: 'Fuzz',
          model: 'fast',
          instructions: 'Be brief.',
          effort: 'low',
          skills: [],
          tools: [],
        },
      },
      {
        endpoint: 'PATCH /v1/agents/:id',
        method: 'PATCH',
        path: `/v1/agents/${t.agentId}`,
        valid: { name: 'Helper', instructions: 'Help with care.' },
      },
      {
        endpoint: 'POST /v1/skills',
        method: 'POST',
        path: '/v1/skills',
        valid: {
          slug: 'fuzz-skill',
          name: 'Fuzz',
          description: 'One sentence.',
          instructions: 'Do it.',
          visibility: 'org',
          status: 'active',
          published: false,
        },
      },
      {
        endpoint: 'PATCH /v1/skills/:id',
        method: 'PATCH',
        path: `/v1/skills/${t.skillId}`,
        valid: { description: 'Still one sentence.' },
      },
      {
        endpoint: 'POST /v1/conversations',
        method: 'POST',
        path: '/v1/conversations',
        valid: { agentId: t.agentId },
      },
      {
        endpoint: 'POST /v1/conversations/:id/messages',
        method: 'POST',
        path: `/v1/conversations/${t.messageConversationId ?? t.conversationId}/messages`,
        valid: { text: 'hello', attachmentIds: [], effort: 'low' },
      },
      {
        endpoint: 'POST /v1/turns/:id/requests/:blockId',
        method: 'POST',
        path: `/v1/turns/${t.turnId}/requests/${t.blockId}`,
        valid: { approved: false, note: 'no' },
      },
    ];

  for (const e of bodyEndpoints) {
    const fields = Object.keys(e.valid);
    for (const field of fields) {
      const { [field]: _dropped, ...rest } = e.valid;
      cases.push(jsonCase(e.endpoint, `missing ${field}`, e.method, e.path, rest));
      for (const [name, value] of WRONG_VALUES) {
        cases.push(
          jsonCase(e.endpoint, `${field}: ${name}`, e.method, e.path, { ...e.valid, [field]: value }),
        );
      }
      for (const [i, value] of UNICODE_EDGE_STRINGS.entries()) {
        cases.push(
          jsonCase(e.endpoint, `${field}: unicode #${i}`, e.method, e.path, { ...e.valid, [field]: value }),
        );
      }
    }
    cases.push(jsonCase(e.endpoint, 'extra field', e.method, e.path, { ...e.valid, extra: 1 }));
    cases.push(jsonCase(e.endpoint, 'empty object', e.method, e.path, {}));
    for (const [name, raw] of RAW_BODIES) {
      cases.push({
        endpoint: e.endpoint,
        mutation: `raw body: ${name}`,
        method: e.method,
        path: e.path,
        headers: { ...JSON_TYPE },
        body: raw,
      });
    }
    for (const type of CONTENT_TYPES) {
      cases.push({
        endpoint: e.endpoint,
        mutation: `content-type: ${type || '(none)'}`,
        method: e.method,
        path: e.path,
        headers: type ? { 'content-type': type } : {},
        body: JSON.stringify(e.valid),
      });
    }
  }

  // Agent tools: a JSON schema nested deep, a URL outside the allow-list, a built-in name.
  const tool = (extra: Record<string, unknown>) => ({
    name: 'fuzz_tool',
    description: 'A tool.',
    parameters: { type: 'object' },
    url: 'http://127.0.0.1:9/tool',
    requiresApproval: false,
    ...extra,
  });
  const agentWithTools = (mutation: string, tools: unknown[]) =>
    jsonCase('POST /v1/agents', mutation, 'POST', '/v1/agents', {
      id: `fuzz-tools-${cases.length}`,
      name: 'Tools',
      model: 'fast',
      tools,
    });
  // Too deep for JSON.stringify: written out.
  const deepSchema = `${'{"type":"object","properties":{"a":'.repeat(3000)}{"type":"string"}${'}}'.repeat(3000)}`;
  const deepTool = JSON.stringify(tool({ parameters: '$DEEP' })).replace('"$DEEP"', deepSchema);
  cases.push({
    endpoint: 'POST /v1/agents',
    mutation: 'tool parameters nested 3000 deep',
    method: 'POST',
    path: '/v1/agents',
    headers: { ...JSON_TYPE },
    body: `{"id":"fuzz-deep-tool","name":"Deep","model":"fast","tools":[${deepTool}]}`,
  });
  cases.push(
    agentWithTools('tool url outside the allow-list', [
      tool({ url: 'http://169.254.169.254/latest/meta-data' }),
    ]),
    agentWithTools('tool url with credentials', [tool({ url: 'http://user:pass@127.0.0.1:9/x' })]),
    agentWithTools('tool url javascript:', [tool({ url: 'javascript:alert(1)' })]),
    agentWithTools('tool named like a built-in', [tool({ name: 'read_document' })]),
    agentWithTools('two tools, one name', [tool({}), tool({})]),
    agentWithTools(
      '65 tools',
      Array.from({ length: 65 }, (_, i) => tool({ name: `t${i}` })),
    ),
  );

  // Ids in every path that takes one.
  const idRoutes: {
    endpoint: string;
    method: string;
    path: (id: string) => string;
    own: string;
    other: string;
    body?: unknown;
  }[] = [
    {
      endpoint: 'GET /v1/agents/:id',
      method: 'GET',
      path: (id) => `/v1/agents/${id}`,
      own: t.agentId,
      other: t.otherOrg.agentId,
    },
    {
      endpoint: 'PATCH /v1/agents/:id',
      method: 'PATCH',
      path: (id) => `/v1/agents/${id}`,
      own: t.agentId,
      other: t.otherOrg.agentId,
      body: { name: 'X' },
    },
    {
      endpoint: 'GET /v1/skills/:id',
      method: 'GET',
      path: (id) => `/v1/skills/${id}`,
      own: t.skillId,
      other: t.otherOrg.skillId,
    },
    {
      endpoint: 'PATCH /v1/skills/:id',
      method: 'PATCH',
      path: (id) => `/v1/skills/${id}`,
      own: t.skillId,
      other: t.otherOrg.skillId,
      body: { name: 'X' },
    },
    {
      endpoint: 'GET /v1/attachments/:id',
      method: 'GET',
      path: (id) => `/v1/attachments/${id}`,
      own: t.attachmentId,
      other: t.otherOrg.attachmentId,
    },
    ...['', '/messages', '/prompt-preview'].map((suffix) => ({
      endpoint: `GET /v1/conversations/:id${suffix}`,
      method: 'GET',
      path: (id: string) => `/v1/conversations/${id}${suffix}`,
      own: t.conversationId,
      other: t.otherOrg.conversationId,
    })),
    {
      endpoint: 'POST /v1/conversations/:id/messages',
      method: 'POST',
      path: (id) => `/v1/conversations/${id}/messages`,
      own: t.conversationId,
      other: t.otherOrg.conversationId,
      body: { text: 'hi' },
    },
    ...['', '/usage', '/trace'].map((suffix) => ({
      endpoint: `GET /v1/turns/:id${suffix}`,
      method: 'GET',
      path: (id: string) => `/v1/turns/${id}${suffix}`,
      own: t.turnId,
      other: t.otherOrg.turnId,
    })),
    {
      endpoint: 'POST /v1/turns/:id/cancel',
      method: 'POST',
      path: (id) => `/v1/turns/${id}/cancel`,
      own: t.turnId,
      other: t.otherOrg.turnId,
    },
    {
      endpoint: 'POST /v1/turns/:id/requests/:blockId',
      method: 'POST',
      path: (id) => `/v1/turns/${id}/requests/${t.blockId}`,
      own: t.turnId,
      other: t.otherOrg.turnId,
      body: { answer: 'x' },
    },
    {
      endpoint: 'POST /v1/turns/:id/requests/:blockId',
      method: 'POST',
      path: (id) => `/v1/turns/${t.turnId}/requests/${id}`,
      own: t.blockId,
      other: t.otherOrg.turnId,
      body: { answer: 'x' },
    },
  ];
  for (const r of idRoutes) {
    for (const [name, id] of badIds(r.own, r.other)) {
      cases.push({
        endpoint: r.endpoint,
        mutation: `id: ${name}`,
        method: r.method,
        path: r.path(id),
        headers: r.body === undefined ? {} : { ...JSON_TYPE },
        body: r.body === undefined ? undefined : JSON.stringify(r.body),
      });
    }
  }

  // The event stream: ids, and Last-Event-IDs that are not stream ids (or are absurd ones).
  const events = (mutation: string, path: string, headers: Record<string, string> = {}) =>
    cases.push({ endpoint: 'GET /v1/conversations/:id/events', mutation, method: 'GET', path, headers });
  for (const [name, id] of badIds(t.conversationId, t.otherOrg.conversationId))
    events(`id: ${name}`, `/v1/conversations/${id}/events`);
  const lastIds = [
    'abc',
    '-1',
    '0',
    '0-0',
    '1-1-1',
    ' 1-1',
    '1-',
    '-1-1',
    '18446744073709551616-0',
    '1-18446744073709551616',
    '99999999999999999999999999-0',
    '9'.repeat(5000),
    '١٢٣-٤',
    '1-1\t',
    '$',
    '+',
    '>',
  ];
  for (const id of lastIds) {
    events(`Last-Event-ID: ${id.slice(0, 30)}`, `${conv}/events`, { 'last-event-id': id });
    events(`?lastEventId=${id.slice(0, 30)}`, `${conv}/events?lastEventId=${encodeURIComponent(id)}`);
  }
  events('?lastEventId twice', `${conv}/events?lastEventId=1-1&lastEventId=2-2`);
  events('?lastEventId[]', `${conv}/events?lastEventId[a]=1`);

  // Wrong methods on every route; unknown routes.
  const routes: [template: string, path: string][] = [
    ['/v1/me', '/v1/me'],
    ['/v1/models', '/v1/models'],
    ['/v1/agents', '/v1/agents'],
    ['/v1/agents/:id', `/v1/agents/${t.agentId}`],
    ['/v1/skills', '/v1/skills'],
    ['/v1/skills/:id', `/v1/skills/${t.skillId}`],
    ['/v1/attachments', '/v1/attachments'],
    ['/v1/attachments/:id', `/v1/attachments/${t.attachmentId}`],
    ['/v1/conversations', '/v1/conversations'],
    ['/v1/conversations/:id', conv],
    ['/v1/conversations/:id/messages', `${conv}/messages`],
    ['/v1/conversations/:id/prompt-preview', `${conv}/prompt-preview`],
    ['/v1/conversations/:id/events', `${conv}/events`],
    ['/v1/turns/:id', `/v1/turns/${t.turnId}`],
    ['/v1/turns/:id/usage', `/v1/turns/${t.turnId}/usage`],
    ['/v1/turns/:id/trace', `/v1/turns/${t.turnId}/trace`],
    ['/v1/turns/:id/cancel', `/v1/turns/${t.turnId}/cancel`],
    ['/v1/turns/:id/requests/:blockId', `/v1/turns/${t.turnId}/requests/${t.blockId}`],
    ['/health/live', '/health/live'],
    ['/health/ready', '/health/ready'],
    ['/metrics', '/metrics'],
  ];
  for (const [template, path] of routes) {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'POST', 'GET', 'OPTIONS', 'HEAD']) {
      cases.push({
        endpoint: `${method} ${template}`,
        mutation: 'method',
        method,
        path,
        headers: method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? {} : { ...JSON_TYPE },
        body: method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? undefined : '{}',
      });
    }
  }
  for (const path of [
    '/v2/me',
    '/v1',
    '/v1/',
    '/v1/me/',
    '/v1//me',
    '/v1/me?x=%ff',
    '/v1/../v1/me',
    '/%2e%2e/v1/me',
    '/v1/me%00',
    '/v1/agents/a/b/c',
  ]) {
    cases.push({ endpoint: 'unknown route', mutation: `path ${path}`, method: 'GET', path, headers: {} });
  }

  // Authorization headers that are not a valid key (anonymous cases carry no key at all).
  for (const [name, value] of AUTH_HEADERS) {
    cases.push({
      endpoint: 'GET /v1/me',
      mutation: `authorization: ${name}`,
      method: 'GET',
      path: '/v1/me',
      headers: value === null ? { authorization: '' } : { authorization: value },
    });
  }

  // Multipart uploads that are malformed or odd.
  const boundary = '----fuzzboundary';
  const part = (name: string, value: string, filename?: string) =>
    `--${boundary}\r\ncontent-disposition: form-data; name="${name}"${filename !== undefined ? `; filename="${filename}"` : ''}\r\n${filename !== undefined ? 'content-type: application/octet-stream\r\n' : ''}\r\n${value}\r\n`;
  const end = `--${boundary}--\r\n`;
  const multipart = (mutation: string, body: string, type = `multipart/form-data; boundary=${boundary}`) =>
    cases.push({
      endpoint: 'POST /v1/attachments',
      mutation,
      method: 'POST',
      path: '/v1/attachments',
      headers: { 'content-type': type },
      body,
    });
  multipart('no parts', end);
  multipart('no file field', part('conversationId', t.conversationId) + end);
  multipart('file under another name', part('upload', 'hello', 'a.txt') + end);
  multipart('two files', part('file', 'one', 'a.txt') + part('file', 'two', 'b.txt') + end);
  multipart('unterminated', part('file', 'hello', 'a.txt'));
  multipart('truncated headers', `--${boundary}\r\ncontent-disposition: form-da`);
  multipart('no boundary', part('file', 'hello', 'a.txt') + end, 'multipart/form-data');
  multipart('boundary mismatch', part('file', 'hello', 'a.txt') + end, 'multipart/form-data; boundary=other');
  multipart('empty boundary', part('file', 'hello', 'a.txt') + end, 'multipart/form-data; boundary=');
  multipart(
    'conversationId not a uuid',
    part('conversationId', 'not-a-uuid') + part('file', 'hello', 'a.txt') + end,
  );
  multipart(
    'conversationId of another org',
    part('conversationId', t.otherOrg.conversationId) + part('file', 'hello', 'a.txt') + end,
  );
  multipart(
    'conversationId 10 kB',
    part('conversationId', 'c'.repeat(10_000)) + part('file', 'hello', 'a.txt') + end,
  );
  multipart(
    '50 fields',
    Array.from({ length: 50 }, (_, i) => part(`f${i}`, 'x')).join('') + part('file', 'hello', 'a.txt') + end,
  );
  multipart('empty file', part('file', '', 'empty.txt') + end);
  multipart('filename with CR LF and NUL', part('file', 'hello', 'a\\r\\nb\u0000.txt') + end);
  multipart('filename 10k', part('file', 'hello', `${'n'.repeat(10_000)}.txt`) + end);
  multipart('json body', '{"file": "hello"}', 'application/json');

  // Generated bodies: any JSON value for the object, then objects with the right keys and any values.
  for (const e of bodyEndpoints) {
    const generated = options.generatedPerEndpoint ?? 25;
    const keys = Object.keys(e.valid);
    const anyValue = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.string({ unit: 'grapheme', maxLength: 60 }),
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.string({ maxLength: 10 }), { maxLength: 5 }),
      fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 4 }),
    );
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.record(Object.fromEntries(keys.map((k) => [k, anyValue])), { requiredKeys: [] }),
      fc.record(Object.fromEntries(keys.map((k) => [k, fc.oneof(fc.constant(e.valid[k]), anyValue)]))),
    );
    const sampled = fc.sample(body, { seed: seed + cases.length, numRuns: generated });
    sampled.forEach((value, i) =>
      cases.push(jsonCase(e.endpoint, `generated #${i}`, e.method, e.path, value)),
    );
  }
  return cases;
}
