import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { cancelChannel, QueueName, type Env, type PortalEvent, readRedisUrl } from '@portal/contracts';
import { BLOB_STORE, type BlobStore } from '@portal/application';
import { AttachmentRepository, BlockRepository, TurnRepository } from '@portal/dal';
import {
  AttachmentId,
  type AttachmentKind,
  type Block,
  ConversationId,
  OrgId,
  TurnId,
  type TurnStatus,
  UserId,
} from '@portal/domain';
import { queueKeyPrefix } from '@portal/queue';
import { createTestDatabase, deleteRedisPrefix, portalSseParser, type TestDatabase } from '@portal/testing';
import { readConfig, type GatewayConfig } from '../src/config';
import { createGatewayApp } from '../src/gateway-app.util';

export const REDIS_URL = readRedisUrl(process.env);

/** API keys of the standard bootstrap file. */
export const KEYS = {
  alice: 'pk_test_alice_author', // acme author
  bob: 'pk_test_bob_member', // acme member
  carol: 'pk_test_carol_admin', // acme admin
  dave: 'pk_test_dave_author', // acme author, owns the private skill `secret`
  mallory: 'pk_test_mallory_author', // globex author
} as const;
export type Who = keyof typeof KEYS;

export const MODELS_YAML = `
models:
  - id: seeing
    baseURL: http://127.0.0.1:9/v1
    contextWindow: 100000
    vision: { maxLongSide: 2048, maxShortSide: 768 }
    reasoning: true
    price: { inputPerMTok: 1, outputPerMTok: 2 }
  - id: blind
    baseURL: http://127.0.0.1:9/v1
    contextWindow: 50000
    compactAt: 0.5
    price: { inputPerMTok: 1, outputPerMTok: 2 }
`;

const skill = (slug: string, extra: Record<string, unknown> = {}) => ({
  slug,
  name: slug,
  description: `The ${slug} skill.`,
  instructions: `Do ${slug}.`,
  visibility: 'org',
  status: 'active',
  published: true,
  owner: 'alice',
  ...extra,
});

/** Two orgs: acme (four users, four skills, two agents) and globex (one of each). */
export const STANDARD_BOOTSTRAP = {
  portalFloor: 'You are the Acme test assistant.',
  orgs: [
    {
      id: 'acme',
      users: [
        { id: 'alice', role: 'author', apiKey: KEYS.alice },
        { id: 'bob', role: 'member', apiKey: KEYS.bob },
        { id: 'carol', role: 'admin', apiKey: KEYS.carol },
        { id: 'dave', role: 'author', apiKey: KEYS.dave },
      ],
      skills: [
        skill('fact-check'),
        skill('style-guide'),
        skill('draft', { published: false }),
        skill('secret', { visibility: 'private', owner: 'dave' }),
        skill('retired', { status: 'inactive' }),
      ],
      agents: [
        {
          id: 'researcher',
          name: 'Researcher',
          instructions: 'Research carefully.',
          model: 'seeing',
          effort: 'medium',
          skills: ['fact-check', 'style-guide', 'secret', 'retired', 'draft'],
          tools: [],
        },
        { id: 'blind', name: 'Blind', model: 'blind', effort: 'low' },
      ],
    },
    {
      id: 'globex',
      users: [{ id: 'mallory', role: 'author', apiKey: KEYS.mallory }],
      skills: [skill('globex-only', { owner: 'mallory' })],
      agents: [{ id: 'rival', name: 'Rival', model: 'seeing', skills: ['globex-only'] }],
    },
  ],
};

/** A response body as tests read it: field by field, checked by the assertions. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyBody = any;

export interface CallResult<T = AnyBody> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Harness {
  url: string;
  app: NestFastifyApplication;
  /** Every route Fastify registered (method and path as Fastify writes them), HEAD included. */
  routes: { method: string; url: string }[];
  db: TestDatabase;
  config: GatewayConfig;
  prefix: string;
  redis: IORedis;
  call<T = AnyBody>(
    method: string,
    path: string,
    opts?: { as?: Who | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<CallResult<T>>;
  close(): Promise<void>;
}

/**
 * The temporary files of the test file that imports this module, removed after its tests. The
 * hook is registered on import, at the test file's top level, where Jest takes hooks; a gateway
 * reads these files when it starts, so they may go before the file's own afterAll closes it.
 */
const TEMP_ROOT = mkdtempSync(path.join(tmpdir(), 'gateway-test-'));
afterAll(() => rmSync(TEMP_ROOT, { recursive: true, force: true }));

/** Writes `content` to a fresh temporary file (a folder each, as names repeat) and returns its path. */
export function tempFile(name: string, content: string): string {
  const file = path.join(mkdtempSync(path.join(TEMP_ROOT, 'file-')), name);
  writeFileSync(file, content);
  return file;
}

/** The env of a gateway on `db` with its own Redis prefix and the test catalogue. */
export function testEnv(db: TestDatabase, extra: Env = {}): Env {
  return {
    DATABASE_URL: db.url,
    REDIS_URL,
    PORTAL_PREFIX: `gw-${randomBytes(4).toString('hex')}`,
    PORTAL_MODELS_FILE: tempFile('models.yaml', MODELS_YAML),
    PORTAL_TOOL_URL_ALLOW: 'https://tools.example.com/',
    ...extra,
  };
}

/**
 * A gateway in this process on a fresh database and its own Redis prefix, listening on a free
 * port. `bootstrap: null` boots without a bootstrap file (the demo org).
 */
export async function startGateway(
  opts: { bootstrap?: object | null; env?: Env; db?: TestDatabase } = {},
): Promise<Harness> {
  const db = opts.db ?? (await createTestDatabase());
  const bootstrap = opts.bootstrap === undefined ? STANDARD_BOOTSTRAP : opts.bootstrap;
  const env = testEnv(db, {
    ...(bootstrap && { PORTAL_BOOTSTRAP_FILE: tempFile('bootstrap.json', JSON.stringify(bootstrap)) }),
    ...opts.env,
  });
  const config = readConfig(env);
  const routes: Harness['routes'] = [];
  const app = await createGatewayApp(config, {
    logger: false,
    onRoute: ({ method, url }) => [method].flat().forEach((one) => routes.push({ method: one, url })),
  });
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  const redis = new IORedis(REDIS_URL);
  return {
    url,
    app,
    routes,
    db,
    config,
    prefix: config.prefix,
    redis,
    async call(method, route, { as = 'alice', body, headers = {} } = {}) {
      const res = await fetch(url + route, {
        method,
        headers: {
          ...(as && { authorization: `Bearer ${KEYS[as]}` }),
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON: keep the text
      }
      return { status: res.status, body: parsed as AnyBody, headers: res.headers };
    },
    async close() {
      await app.close().catch(() => undefined); // a test may have closed it already
      await deleteRedisPrefix(redis, config.prefix);
      await redis.quit();
      if (!opts.db) await db.drop();
    },
  };
}

// --- Seeding and inspecting -------------------------------------------------------------------

export async function newConversation(
  gw: Harness,
  as: Who = 'alice',
  agentId = 'researcher',
): Promise<string> {
  const res = await gw.call('POST', '/v1/conversations', { as, body: { agentId } });
  if (res.status !== 201) throw new Error(`conversation: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

export async function send(
  gw: Harness,
  conversationId: string,
  body: { text: string; attachmentIds?: string[]; effort?: string },
  as: Who = 'alice',
): Promise<CallResult> {
  return gw.call('POST', `/v1/conversations/${conversationId}/messages`, { as, body });
}

/** Opens a turn through the API and returns its id. */
export async function openTurn(gw: Harness, conversationId: string, text = 'hello', as: Who = 'alice') {
  const res = await send(gw, conversationId, { text }, as);
  if (res.status !== 202) throw new Error(`turn: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.turnId as string;
}

export async function setStatus(gw: Harness, turnId: string, status: TurnStatus, orgId = 'acme') {
  await new TurnRepository(gw.db.dataSource).updateStatus(OrgId(orgId), TurnId(turnId), status);
}

/** What the orchestrator does when the turn asks: an assistant message ending in a request; paused. */
export async function pauseWithRequest(
  gw: Harness,
  turnId: string,
  kind: 'clarification_request' | 'approval_request',
  orgId = 'acme',
): Promise<Block> {
  const blocks = new BlockRepository(gw.db.dataSource);
  const request =
    kind === 'clarification_request'
      ? { kind, callId: 'c1', question: 'Which year?', options: ['2024', '2025'], answer: null }
      : { kind, callId: 'c1', name: 'lookup', arguments: '{}', approved: null, note: null };
  const [block] = (await blocks.append(OrgId(orgId), TurnId(turnId), [request]))!.blocks;
  await setStatus(gw, turnId, 'paused', orgId);
  return block;
}

export async function attachment(
  gw: Harness,
  opts: { orgId?: string; userId?: string; kind?: AttachmentKind; conversationId?: string | null } = {},
): Promise<string> {
  const kind = opts.kind ?? 'document';
  const orgId = opts.orgId ?? 'acme';
  const id = randomUUID();
  await gw.app
    .get<BlobStore>(BLOB_STORE)
    .put({ orgId: OrgId(orgId), attachmentId: AttachmentId(id), variant: 'original' }, Buffer.from('abc'));
  const created = await new AttachmentRepository(gw.db.dataSource).create(OrgId(orgId), {
    id,
    userId: UserId(opts.userId ?? 'alice'),
    conversationId: opts.conversationId ? ConversationId(opts.conversationId) : null,
    kind,
    filename: kind === 'picture' ? 'photo.png' : 'notes.txt',
    mimeType: kind === 'picture' ? 'image/png' : 'text/plain',
    byteSize: 3,
    sha256: randomUUID(),
  });
  return created!.id;
}

const COUNTED = ['turns', 'messages', 'blocks', 'trace_entries'] as const;

/** Row counts of what opening a turn writes. */
export async function counts(gw: Harness): Promise<Record<(typeof COUNTED)[number], number>> {
  const out = {} as Record<(typeof COUNTED)[number], number>;
  for (const table of COUNTED) {
    const [{ n }] = await gw.db.dataSource.query(`SELECT count(*)::int AS n FROM ${table}`);
    out[table] = n;
  }
  return out;
}

/** A job of the gateway's queues by id, or undefined. */
export async function job(gw: Harness, queue: QueueName, jobId: string) {
  const connection = gw.redis.duplicate();
  const q = new Queue(queue, { connection, prefix: queueKeyPrefix(gw.prefix, queue) });
  try {
    const found = await q.getJob(jobId);
    return found ? { name: found.name, data: found.data } : undefined;
  } finally {
    await q.close();
    await connection.quit();
  }
}

/** Listens on the cancel channel as a worker does, for the turn ids the gateway announces there. */
export async function cancelListener(
  gw: Harness,
): Promise<{ heard(): Promise<string[]>; close(): Promise<void> }> {
  const subscriber = new IORedis(REDIS_URL);
  const heard: string[] = [];
  subscriber.on('message', (_channel: string, message: string) => heard.push(message));
  await subscriber.subscribe(cancelChannel(gw.prefix));
  return {
    async heard() {
      // Pub/sub is delivered in order on one connection: a ping after it proves what was published has arrived.
      await subscriber.ping();
      return heard;
    },
    async close() {
      await subscriber.quit();
    },
  };
}

// --- Server-Sent Events ----------------------------------------------------------------------

export interface SseEvent {
  id: string;
  data: PortalEvent;
}

export interface SseClient {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The next event (comments skipped). */
  next(): Promise<SseEvent>;
  /** The next `n` events. */
  take(n: number): Promise<SseEvent[]>;
  close(): void;
}

export async function openSse(
  gw: Harness,
  conversationId: string,
  opts: { as?: Who; lastEventId?: string; query?: string } = {},
): Promise<SseClient> {
  // node:http with its own socket: fetch's pool may keep a spare connection open after an abort.
  const req = http.get(`${gw.url}/v1/conversations/${conversationId}/events${opts.query ?? ''}`, {
    agent: false,
    headers: {
      authorization: `Bearer ${KEYS[opts.as ?? 'alice']}`,
      ...(opts.lastEventId && { 'last-event-id': opts.lastEventId }),
    },
  });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  res.setEncoding('utf8');
  const chunks = res[Symbol.asyncIterator]();
  const parsed: SseEvent[] = [];
  const parser = portalSseParser((event) => parsed.push(event));
  const next = async (): Promise<SseEvent> => {
    while (parsed.length === 0) {
      const chunk = await chunks.next();
      if (chunk.done) throw new Error('stream ended');
      parser.feed(chunk.value as string);
    }
    return parsed.shift()!;
  };
  return {
    status: res.statusCode ?? 0,
    headers: res.headers,
    next,
    async take(n) {
      const events: SseEvent[] = [];
      while (events.length < n) events.push(await next());
      return events;
    },
    close: () => req.destroy(),
  };
}
