import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createLogger, METRIC } from '@portal/observability';
import { captureLogs, createTestDatabase, deleteRedisPrefix, type TestDatabase } from '@portal/testing';
import { KEYS, REDIS_URL, STANDARD_BOOTSTRAP, tempFile, testEnv } from '../test/gateway-harness.util';
import { readConfig, type GatewayConfig } from './config';
import { ConversationsService } from './conversations/conversations.service';
import { createGatewayApp } from './gateway-app.util';

/** What must never reach a log line: the keys used, a message's text, a document's text. */
const MESSAGE_TEXT = 'Please summarise the merger memo codename BLUE-HERON.';
const DOCUMENT_TEXT = 'Board minutes: the acquisition price is 41 million.';
const WRONG_KEY = 'pk_wrong_key_never_logged';

let db: TestDatabase;
let config: GatewayConfig;
let app: NestFastifyApplication;
let url: string;
const logs = captureLogs();

beforeAll(async () => {
  db = await createTestDatabase();
  config = readConfig(
    testEnv(db, { PORTAL_BOOTSTRAP_FILE: tempFile('bootstrap.json', JSON.stringify(STANDARD_BOOTSTRAP)) }),
  );
  const log = createLogger({ name: 'gateway', level: 'debug', destination: logs.destination });
  app = await createGatewayApp(config, { log });
  await app.listen(0, '127.0.0.1');
  url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
});
afterAll(async () => {
  await app?.close().catch(() => undefined);
  await deleteRedisPrefix(REDIS_URL, config.prefix);
  await db?.drop();
});

async function call(method: string, path: string, key: string | null, body?: unknown) {
  const res = await fetch(url + path, {
    method,
    headers: {
      ...(key && { authorization: `Bearer ${key}` }),
      ...(body !== undefined && !(body instanceof FormData) && { 'content-type': 'application/json' }),
    },
    body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text.startsWith('{') ? JSON.parse(text) : text };
}

describe('gateway logs', () => {
  let conversationId: string;
  let turnId: string;

  beforeAll(async () => {
    conversationId = (await call('POST', '/v1/conversations', KEYS.alice, { agentId: 'researcher' })).body.id;
    const sent = await call('POST', `/v1/conversations/${conversationId}/messages`, KEYS.alice, {
      text: MESSAGE_TEXT,
    });
    expect(sent.status).toBe(202);
    turnId = sent.body.turnId;
    expect((await call('GET', `/v1/turns/${turnId}`, KEYS.alice)).status).toBe(200);
    const form = new FormData();
    form.append('file', new Blob([DOCUMENT_TEXT], { type: 'text/plain' }), 'minutes.txt');
    expect((await call('POST', '/v1/attachments', KEYS.bob, form)).status).toBe(201);
    expect((await call('GET', '/v1/me', WRONG_KEY)).status).toBe(401);
    // An event stream the client leaves: its line is written when it closes.
    const stream = new AbortController();
    const events = await fetch(`${url}/v1/conversations/${conversationId}/events`, {
      headers: { authorization: `Bearer ${KEYS.alice}` },
      signal: stream.signal,
    });
    expect(events.status).toBe(200);
    stream.abort();
    // A fault inside a handler: its error line is logged while the request's ids are known.
    jest.spyOn(app.get(ConversationsService), 'get').mockRejectedValueOnce(new Error('database went away'));
    expect((await call('GET', `/v1/conversations/${conversationId}`, KEYS.alice)).status).toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the last onResponse hooks
  });

  it('are JSON lines, Nest’s own included', () => {
    const lines = logs.lines(); // throws on a line that is not JSON
    expect(lines.length).toBeGreaterThan(5);
    expect(lines.every((l) => l.name === 'gateway' && typeof l.level === 'string')).toBe(true);
    expect(lines.some((l) => typeof l.context === 'string')).toBe(true);
  });

  it("carry the request's org, user, conversation and turn ids", () => {
    const requests = logs.lines().filter((l) => l.msg === 'request');
    expect(requests).toContainEqual(
      expect.objectContaining({
        route: '/v1/conversations/:id/messages',
        status: 202,
        orgId: 'acme',
        userId: 'alice',
        conversationId,
        reqId: expect.any(String),
        durationMs: expect.any(Number),
      }),
    );
    expect(requests).toContainEqual(
      expect.objectContaining({ route: '/v1/turns/:id', turnId, orgId: 'acme', status: 200 }),
    );
    expect(requests).toContainEqual(expect.objectContaining({ route: '/v1/me', status: 401 }));
    expect(requests).toContainEqual(
      expect.objectContaining({ route: '/v1/conversations/:id/events', status: 200, conversationId }),
    );
    // A line logged while a request is handled carries its ids, its reqId the request line's.
    const fault = logs.lines().find((l) => l.level === 'error' && l.context === 'ApiErrorFilter');
    expect(fault).toMatchObject({
      orgId: 'acme',
      userId: 'alice',
      conversationId,
      reqId: expect.any(String),
    });
    expect(requests).toContainEqual(expect.objectContaining({ reqId: fault!.reqId, status: 500 }));
    expect(new Set(requests.map((l) => l.reqId)).size).toBe(requests.length);
  });

  it('never contain an API key, a message or a document', () => {
    const all = logs.raw.join('\n');
    for (const secret of [...Object.values(KEYS), WRONG_KEY, MESSAGE_TEXT, DOCUMENT_TEXT, 'BLUE-HERON']) {
      expect(all).not.toContain(secret);
    }
  });
});

describe('GET /metrics', () => {
  it("exposes the portal's metrics beside the gateway's, queue depth read from Redis", async () => {
    const { body } = await call('POST', '/v1/conversations', KEYS.alice, { agentId: 'researcher' });
    await call('POST', `/v1/conversations/${body.id}/messages`, KEYS.alice, { text: 'hello' });
    const res = await call('GET', '/metrics', null);
    expect(res.status).toBe(200);
    const text = res.body as string;
    for (const name of Object.values(METRIC)) expect(text).toContain(`# TYPE ${name} `);
    expect(text).toContain('# TYPE portal_gateway_sse_connections gauge');
    expect(text).toContain('# TYPE portal_gateway_http_requests_total counter');
    // Nothing consumes in this test: the turn waits in its queue.
    expect(text).toMatch(/portal_queue_jobs\{queue="turns",state="waiting"\} [1-9]/);
    expect(text).toMatch(/portal_queue_jobs\{queue="compactions",state="active"\} 0/);
    // Counted when the response closes: the event stream its client left too.
    expect(text).toMatch(
      /portal_gateway_http_requests_total\{method="GET",route="\/v1\/conversations\/:id\/events",status="200"\} 1/,
    );
  });
});

describe('shutdown', () => {
  it('stops accepting connections once closed', async () => {
    expect((await call('GET', '/health/live', null)).status).toBe(200);
    await app.close();
    await expect(fetch(`${url}/health/live`)).rejects.toThrow();
  });
});
