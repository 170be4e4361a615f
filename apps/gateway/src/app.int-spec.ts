import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { API_ROUTES, openApiPath } from '@portal/contracts';
import { KEYS, startGateway, type Harness } from '../test/gateway-harness.util';
import { BODY_LIMIT_BYTES, REFUSED_BODY_READ_BYTES } from './common/body-limits';
import { defaultWebRoot, WEB_CLIENT_ROUTES } from './web/web.module';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe('authentication', () => {
  it.each([
    ['no header', {}],
    ['an unknown key', { authorization: 'Bearer pk_nobody_has_this' }],
    ['another scheme', { authorization: 'Basic cGtfdGVzdA==' }],
  ])('answers 401 unauthorized with %s', async (_, headers) => {
    const res = await gw.call('GET', '/v1/me', { as: null, headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: { code: 'unauthorized', message: expect.any(String) } });
  });

  it('knows the caller from the key', async () => {
    expect((await gw.call('GET', '/v1/me', { as: 'bob' })).body).toEqual({
      userId: 'bob',
      orgId: 'acme',
      role: 'member',
      via: 'apiKey',
    });
    expect((await gw.call('GET', '/v1/me', { as: 'mallory' })).body).toEqual({
      userId: 'mallory',
      orgId: 'globex',
      role: 'author',
      via: 'apiKey',
    });
  });

  it('leaves health and metrics open', async () => {
    expect((await gw.call('GET', '/health/live', { as: null })).status).toBe(200);
    expect((await gw.call('GET', '/health/ready', { as: null })).body).toEqual({
      status: 'checked',
      checks: { database: true, redis: true },
    });
    expect((await gw.call('GET', '/metrics', { as: null })).status).toBe(200);
  });
});

describe('errors', () => {
  it('answers an unknown route 404 not_found in the error shape', async () => {
    const res = await gw.call('GET', '/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('answers malformed JSON 400 validation_failed', async () => {
    const res = await gw.call('POST', '/v1/conversations', { body: '{"agentId": ' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
  });

  it('answers a body over the limit 413 too_large', async () => {
    const res = await gw.call('POST', '/v1/conversations', {
      body: JSON.stringify({ agentId: 'x'.repeat(BODY_LIMIT_BYTES) }),
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('too_large');
  });

  it('reads the rest of a refused body, so its sender gets the 413 and keeps the connection', async () => {
    const conn = await RawConnection.open(gw.url);
    const size = 2 * BODY_LIMIT_BYTES;
    conn.send(jsonPostHead('/v1/conversations', size));
    // The answer comes before the body is sent; the client then sends all of it.
    expect(await conn.nextAnswer()).toMatch(/^HTTP\/1\.1 413 [^]*"code":"too_large"/);
    await conn.send(Buffer.alloc(size, 'x'));
    conn.send('GET /health/live HTTP/1.1\r\nHost: portal\r\n\r\n');
    expect(await conn.nextAnswer()).toMatch(/^HTTP\/1\.1 200 /);
    conn.close();
  });

  it('cuts off a refused body declared larger than it reads', async () => {
    const conn = await RawConnection.open(gw.url);
    conn.send(jsonPostHead('/v1/conversations', REFUSED_BODY_READ_BYTES + 1));
    expect(await conn.nextAnswer()).toMatch(/^HTTP\/1\.1 413 /);
    await conn.ended;
  });

  it('answers a body that is not JSON 415 unsupported_type', async () => {
    const res = await gw.call('POST', '/v1/conversations', {
      body: 'agentId=researcher',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_type');
  });

  it('names the bad field of a body', async () => {
    const missing = await gw.call('POST', '/v1/conversations', { body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toEqual({
      code: 'validation_failed',
      message: expect.stringMatching(/^agentId: /),
    });
    const extra = await gw.call('POST', '/v1/conversations', {
      body: { agentId: 'researcher', colour: 'red' },
    });
    expect(extra.body.error.message).toMatch(/^colour: /);
  });

  it('answers an unexpected failure 500 internal without its details', async () => {
    await gw.db.dataSource.query('ALTER TABLE conversations RENAME COLUMN title TO title_gone');
    try {
      const res = await gw.call('GET', '/v1/conversations');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: { code: 'internal', message: 'Internal server error' } });
    } finally {
      await gw.db.dataSource.query('ALTER TABLE conversations RENAME COLUMN title_gone TO title');
    }
  });
});

describe('GET /v1/models', () => {
  it('lists the catalogue without keys or URLs', async () => {
    const res = await gw.call('GET', '/v1/models', { as: 'bob' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: 'seeing',
        contextWindow: 100000,
        vision: { maxLongSide: 2048, maxShortSide: 768 },
        reasoning: true,
        effortLevels: ['low', 'medium', 'high'],
        price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 1 },
      },
      {
        id: 'blind',
        contextWindow: 50000,
        vision: null,
        reasoning: false,
        effortLevels: [],
        price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 1 },
      },
    ]);
  });
});

describe('GET /metrics', () => {
  it('counts requests by route pattern and status', async () => {
    await gw.call('GET', '/v1/agents/researcher');
    const text = (await gw.call('GET', '/metrics', { as: null })).body as string;
    expect(text).toMatch(
      /portal_gateway_http_requests_total\{method="GET",route="\/v1\/agents\/:id",status="200"\} [1-9]/,
    );
    expect(text).toContain('portal_gateway_sse_connections 0');
    expect(text).toContain('# TYPE portal_gateway_turns_opened_total counter');
  });
});

describe('GET /docs', () => {
  /** Not the API: the docs themselves, the board's own pages and the web client's pages and files. */
  const notApi = (url: string) =>
    /^\/docs(\/|$)/.test(url) ||
    /^\/admin\/queues\/./.test(url) ||
    (WEB_CLIENT_ROUTES as readonly string[]).includes(url) ||
    existsSync(path.join(defaultWebRoot() ?? '/nowhere', url));

  it('serves a valid OpenAPI 3.1 document naming every registered route, and its UI', async () => {
    const doc = await gw.call('GET', '/docs/json', { as: null });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.1.0');
    const validation = await new Validator().validate(doc.body);
    expect(validation.errors).toBeUndefined();

    const api = gw.routes.filter((r) => !['HEAD', 'OPTIONS'].includes(r.method) && !notApi(r.url));
    const undocumented = api.filter((r) => !doc.body.paths[openApiPath(r.url)]?.[r.method.toLowerCase()]);
    expect(undocumented).toEqual([]);
    const unserved = API_ROUTES.filter((r) => !api.some((a) => a.method === r.method && a.url === r.path));
    expect(unserved).toEqual([]);
    expect(doc.body.paths['/v1/conversations'].get.parameters).toEqual([
      expect.objectContaining({ name: 'q' }),
    ]);
    expect(doc.body.components.schemas.Conversation.properties.turns.items.required).toEqual(
      expect.arrayContaining(['error', 'usage']),
    );
    expect(doc.body.components.schemas.Error.properties.error.properties.code.enum).toContain(
      'retry_refused',
    );

    expect(doc.body.components.schemas.Me.properties.via.enum).toEqual(['apiKey', 'oidc']);
    const ui = await fetch(`${gw.url}/docs`);
    expect(ui.status).toBe(200);
  });
});

describe('security headers', () => {
  it('go with every answer: API, errors, probes and the web client', async () => {
    const answers = await Promise.all([
      gw.call('GET', '/v1/me'),
      gw.call('GET', '/v1/me', { as: null }),
      gw.call('GET', '/v1/nothing-here'),
      gw.call('GET', '/health/live', { as: null }),
      gw.call('GET', '/', { as: null }),
      gw.call('GET', '/c/00000000-0000-0000-0000-000000000000', { as: null }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 200, 200, 200]);
    for (const { headers } of answers) {
      const csp = headers.get('content-security-policy') ?? '';
      expect(csp.split(';').map((d) => d.trim())).toEqual(
        expect.arrayContaining([
          "default-src 'self'",
          "script-src 'self'",
          "style-src 'self'",
          "object-src 'none'",
          "frame-ancestors 'none'",
        ]),
      );
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('x-frame-options')).toBe('DENY');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('find no inline script or style in the web client, which the policy would block', async () => {
    const html = (await gw.call('GET', '/', { as: null })).body as string;
    expect(html).toMatch(/<script [^>]*src="\/app\.js"/);
    expect(html.match(/<script\b[^>]*>/g)?.every((tag) => /\bsrc=/.test(tag))).toBe(true);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('leave the docs UI working under its own policy', async () => {
    const ui = await fetch(`${gw.url}/docs`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-security-policy')).toBeTruthy();
    expect(ui.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await ui.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1], ui.url).href);
    expect(assets.length).toBeGreaterThan(0);
    for (const url of assets) {
      const asset = await fetch(url);
      await asset.arrayBuffer(); // read to the end: an unread body keeps its connection busy past close
      expect({ url, status: asset.status }).toEqual({ url, status: 200 });
    }
  });
});

/** The head of a JSON POST as alice, declaring `length` bytes of body. */
function jsonPostHead(route: string, length: number): string {
  return (
    `POST ${route} HTTP/1.1\r\nHost: portal\r\nAuthorization: Bearer ${KEYS.alice}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`
  );
}

/** One HTTP/1.1 connection written and read byte for byte, as a client that sends before it reads. */
class RawConnection {
  private received = '';
  private waiting?: () => void;
  readonly ended: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.received += chunk;
      this.waiting?.();
    });
    this.ended = new Promise((resolve) => socket.on('end', resolve));
  }

  static async open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    const socket = net.connect(Number(port), hostname);
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  /** Resolves once the bytes are written; rejects when the server has closed the connection. */
  send(data: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) =>
      this.socket.write(data, (err) => (err ? reject(err) : resolve())),
    );
  }

  /** The next complete answer (head and Content-Length body), taken off what was received. */
  async nextAnswer(): Promise<string> {
    for (;;) {
      const headEnd = this.received.indexOf('\r\n\r\n');
      if (headEnd >= 0) {
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(this.received.slice(0, headEnd))?.[1] ?? 0);
        const end = headEnd + 4 + length;
        if (this.received.length >= end) {
          const answer = this.received.slice(0, end);
          this.received = this.received.slice(end);
          return answer;
        }
      }
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  close(): void {
    this.socket.destroy();
  }
}
