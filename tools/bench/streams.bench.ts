import { ConversationId } from '@portal/domain';
import { execFileSync } from 'node:child_process';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import IORedis from 'ioredis';
import { Client } from 'pg';
import { conversationEventsKey, readRedisUrl } from '@portal/contracts';
import { RedisConnections, ConversationEvents } from '@portal/redis';
import {
  ApiClient,
  e2eModels,
  startFakeOpenAI,
  startPortal,
  subscribeEvents,
  type EventSubscription,
  type RunningPortal,
} from '@portal/testing';
import { connectionsTo, rssBytes } from './proc.util';
import { buildServices } from './build.util';
import { figure, numberArg as arg, percentile, runMain } from './stats.util';

/**
 * `npm run bench:streams`: what open event streams cost a gateway. The built services run as real
 * processes on a fresh database and Redis prefix, with an instant fake model. Two runs on the same
 * gateway, printed side by side:
 *
 * - few: `--few=N` streams (default 10), one per conversation;
 * - many: `--streams=N` idle streams (default 10,000) over `--conversations=N` (default 1,000).
 *
 * In each, `--turns=N` turns (default 100) run one after another in `--busy=N` of the conversations
 * (default 10), measured from POST to `turn_finished` at every subscriber of the conversation.
 * Printed: the gateway's Redis connections and how many it added since it started with no stream
 * (its own sockets, /proc), gateway memory per stream (RSS), whether every subscriber got every
 * event of its conversation (compared with the stream in Redis) and turn latency p50/p99. Last, a stalled reader: a client that stops reading while
 * `--stall-mb=N` (default 100) MB of events are appended, with the gateway's RSS sampled meanwhile.
 * Then what a turn costs the stores (perTurn): Redis commands and bytes stored in Postgres and Redis.
 */

const FEW = arg('few', 10);
const STREAMS = arg('streams', 10_000);
const CONVERSATIONS = arg('conversations', 1_000);
const TURNS = arg('turns', 100);
const BUSY = arg('busy', 10);
const STALL_MB = arg('stall-mb', 100);
const OPEN_CONCURRENCY = 100;
const API_KEY = 'pk_bench_streams_key';
const REDIS_URL = readRedisUrl(process.env);
const REDIS_PORT = Number(new URL(REDIS_URL).port || 6379);
const TARGETS = { redisConnections: 10, kbPerStream: 30, p50Ratio: 1.5 };

const bootstrap = {
  portalFloor: 'You are the bench assistant.',
  orgs: [
    {
      id: 'bench',
      users: [{ id: 'streamer', role: 'author', apiKey: API_KEY }],
      agents: [{ id: 'bench', name: 'Bench', instructions: 'Answer briefly.', model: 'fast', effort: 'low' }],
    },
  ],
};

interface Conversation {
  id: string;
  subscribers: EventSubscription[];
}

interface RunFigures {
  streams: number;
  conversations: number;
  redisConnections: number;
  redisConnectionsAdded: number;
  bytesPerStream: number;
  subscribersServed: number;
  subscribersChecked: number;
  latencies: number[];
}

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `work` over `items` with at most `limit` at a time. */
async function inBatches<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += limit) await Promise.all(items.slice(i, i + limit).map(work));
}

async function newConversations(api: ApiClient, n: number): Promise<Conversation[]> {
  const out: Conversation[] = [];
  await inBatches(
    Array.from({ length: n }, (_, i) => i),
    OPEN_CONCURRENCY,
    async () => {
      const res = await api.post('/v1/conversations', { agentId: 'bench' });
      if (res.status !== 201) throw new Error(`conversation: ${res.status} ${JSON.stringify(res.body)}`);
      out.push({ id: res.body.id, subscribers: [] });
    },
  );
  return out;
}

async function openStreams(portal: RunningPortal, conversations: Conversation[], perConversation: number) {
  const slots = conversations.flatMap((c) => Array.from({ length: perConversation }, () => c));
  await inBatches(slots, OPEN_CONCURRENCY, async (c) => {
    const sub = await subscribeEvents(`${portal.baseURL}/v1/conversations/${c.id}/events`, API_KEY);
    if (sub.status !== 200) throw new Error(`stream: ${sub.status} ${JSON.stringify(sub.errorBody)}`);
    c.subscribers.push(sub);
  });
}

/** One turn, from POST to `turn_finished` at every subscriber of the conversation. */
async function turn(api: ApiClient, c: Conversation): Promise<number> {
  const from = c.subscribers.map((s) => s.events.length);
  const started = performance.now();
  const res = await api.post(`/v1/conversations/${c.id}/messages`, { text: 'Say OK.' });
  if (res.status !== 202 || res.body.steered)
    throw new Error(`message: ${res.status} ${JSON.stringify(res.body)}`);
  const turnId = res.body.turnId as string;
  await Promise.all(
    c.subscribers.map((s, i) =>
      s.waitFor((e) => e.data.type === 'turn_finished' && e.data.turnId === turnId, {
        from: from[i],
        timeoutMs: 60_000,
      }),
    ),
  );
  return performance.now() - started;
}

/** Subscribers whose events are exactly their conversation's stream (all opened before its first event). */
async function served(redis: IORedis, prefix: string, conversations: Conversation[]): Promise<number> {
  let ok = 0;
  for (const c of conversations) {
    const stored = (await redis.xrange(conversationEventsKey(prefix, ConversationId(c.id)), '-', '+')).map(
      ([id]) => id,
    );
    for (const s of c.subscribers) if (s.events.map((e) => e.id).join() === stored.join()) ok++;
  }
  return ok;
}

/** `connectionsAtStart`: the gateway's Redis connections before it served any stream. */
async function run(
  portal: RunningPortal,
  api: ApiClient,
  redis: IORedis,
  connectionsAtStart: number,
  streams: number,
  conversationCount: number,
): Promise<RunFigures> {
  const gateway = portal.pid('gateway');
  const conversations = await newConversations(api, conversationCount);
  await settle(2000);
  const rssBefore = rssBytes(gateway);
  await openStreams(portal, conversations, Math.round(streams / conversationCount));
  await settle(3000);
  const rssAfter = rssBytes(gateway);
  const connectionsAfter = connectionsTo(gateway, REDIS_PORT);
  const open = conversations.reduce((n, c) => n + c.subscribers.length, 0);

  const busy = conversations.slice(0, BUSY);
  for (const c of busy) await turn(api, c); // warm: each conversation's first turn names it
  const latencies: number[] = [];
  for (let i = 0; i < TURNS; i++) latencies.push(await turn(api, busy[i % busy.length]));
  await settle(500);
  const checked = busy.reduce((n, c) => n + c.subscribers.length, 0);
  const figures: RunFigures = {
    streams: open,
    conversations: conversationCount,
    redisConnections: connectionsAfter,
    redisConnectionsAdded: connectionsAfter - connectionsAtStart,
    bytesPerStream: (rssAfter - rssBefore) / open,
    subscribersServed: await served(redis, portal.prefix, busy),
    subscribersChecked: checked,
    latencies,
  };
  for (const c of conversations) c.subscribers.forEach((s) => s.close());
  await settle(1000);
  return figures;
}

/**
 * What one turn costs the stores, over `TURNS` turns in one conversation with one subscriber:
 * Redis commands naming the bench's prefix (MONITOR, by top-level client or inside a script) and
 * bytes the turns left stored (Postgres database size; Redis memory of the prefix's keys).
 */
async function perTurn(portal: RunningPortal, api: ApiClient, redis: IORedis) {
  const [c] = await newConversations(api, 1);
  await openStreams(portal, [c], 1);
  await turn(api, c); // the first turn also names the conversation
  const pg = new Client({ connectionString: portal.database.url });
  pg.on('error', () => undefined); // the database is dropped when the bench stops
  await pg.connect();
  const dbBytes = async () =>
    Number((await pg.query('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
  const redisBytes = async () => {
    let total = 0;
    for (const pattern of [`${portal.prefix}:*`, `{${portal.prefix}:*`]) {
      for (const key of await redis.keys(pattern)) total += (await redis.memory('USAGE', key)) ?? 0;
    }
    return total;
  };
  const pgBefore = await dbBytes();
  const redisBefore = await redisBytes();
  const monitor = await redis.duplicate().monitor();
  let clientCommands = 0;
  let scriptCommands = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (!args.some((a) => a.includes(portal.prefix))) return;
    if (source === 'lua') scriptCommands++;
    else clientCommands++;
  });
  try {
    for (let i = 0; i < TURNS; i++) await turn(api, c);
    await settle(1000);
  } finally {
    monitor.disconnect();
  }
  const figures = {
    clientCommands: clientCommands / TURNS,
    scriptCommands: scriptCommands / TURNS,
    postgresBytes: ((await dbBytes()) - pgBefore) / TURNS,
    redisBytes: ((await redisBytes()) - redisBefore) / TURNS,
  };
  await pg.end();
  c.subscribers.forEach((s) => s.close());
  return figures;
}

async function droppedStreams(portal: RunningPortal): Promise<number> {
  const text = await (await fetch(`${portal.baseURL}/metrics`)).text();
  return Number(/^portal_gateway_sse_dropped_total (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * A client that stops reading while `STALL_MB` MB of events are appended to its conversation:
 * the gateway's peak RSS above where it started, and whether it dropped the client.
 */
async function stalledReader(portal: RunningPortal, api: ApiClient) {
  const gateway = portal.pid('gateway');
  const [c] = await newConversations(api, 1);
  const req = http.get(`${portal.baseURL}/v1/conversations/${c.id}/events`, {
    agent: false,
    headers: { authorization: `Bearer ${API_KEY}` },
  });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  res.on('error', () => undefined);
  req.on('error', () => undefined);
  res.pause();
  const droppedBefore = await droppedStreams(portal);
  await settle(1000);
  const before = rssBytes(gateway);
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(gateway))), 50);
  const connections = new RedisConnections({ url: REDIS_URL });
  const writer = new ConversationEvents(connections, portal.prefix);
  const text = 'x'.repeat(100_000);
  const count = Math.ceil((STALL_MB * 1_000_000) / text.length);
  try {
    for (let i = 0; i < count; i++)
      await writer.publish(ConversationId(c.id), { type: 'text_delta', turnId: 'stall', blockId: 'b', text });
    await settle(2000);
  } finally {
    clearInterval(sampler);
    await connections.close();
    req.destroy();
  }
  const dropped = (await droppedStreams(portal)) > droppedBefore;
  return { publishedMb: (count * text.length) / 1e6, peakGrowthMb: (peak - before) / 1e6, dropped };
}

async function main(): Promise<void> {
  buildServices();
  const limit = Number(execFileSync('sh', ['-c', 'ulimit -n']).toString().trim());
  if (limit < STREAMS + 1000)
    throw new Error(`open files limit ${limit} is below ${STREAMS + 1000}: raise it (ulimit -n) first`);
  const fake = await startFakeOpenAI({ defaultResponder: () => 'OK.' });
  console.log('starting the portal (built services, fresh database and Redis prefix)…');
  const portal = await startPortal({
    models: e2eModels(fake.baseURL),
    bootstrap,
    // One user holds every stream here; the per-user cap and the request limit are for people.
    env: { RATE_LIMIT_PER_MINUTE: '100000000', SSE_MAX_PER_USER: '0' },
  });
  const api = new ApiClient(portal.baseURL, API_KEY);
  const redis = new IORedis(REDIS_URL);
  try {
    const atStart = connectionsTo(portal.pid('gateway'), REDIS_PORT);
    console.log(`few: ${FEW} streams over ${FEW} conversations…`);
    const few = await run(portal, api, redis, atStart, FEW, FEW);
    console.log(`many: ${STREAMS} streams over ${CONVERSATIONS} conversations…`);
    const many = await run(portal, api, redis, atStart, STREAMS, CONVERSATIONS);
    console.log('stalled reader…');
    const stall = await stalledReader(portal, api);
    console.log(`per turn: ${TURNS} turns in one conversation…`);
    const cost = await perTurn(portal, api, redis);

    const W = 52;
    const cell = (v: string) => v.padStart(14);
    const row = (label: string, a: string, b: string) =>
      console.log(`${label.padEnd(W)}${cell(a)}${cell(b)}`);
    console.log('');
    row('', 'few', 'many');
    row(
      'streams open (conversations)',
      `${few.streams} (${few.conversations})`,
      `${many.streams} (${many.conversations})`,
    );
    row(
      'gateway Redis connections (added since its start)',
      `${few.redisConnections} (+${few.redisConnectionsAdded})`,
      `${many.redisConnections} (+${many.redisConnectionsAdded})`,
    );
    row('gateway RSS per stream (KB)', figure(few.bytesPerStream / 1024), figure(many.bytesPerStream / 1024));
    row(
      'subscribers of busy conversations served fully',
      `${few.subscribersServed}/${few.subscribersChecked}`,
      `${many.subscribersServed}/${many.subscribersChecked}`,
    );
    for (const p of [50, 99])
      row(
        `turn latency p${p}, POST → every subscriber (ms)`,
        figure(percentile(few.latencies, p)),
        figure(percentile(many.latencies, p)),
      );
    console.log(
      `stalled reader: ${figure(stall.publishedMb, 0)} MB appended, gateway RSS peak +${figure(stall.peakGrowthMb)} MB, ` +
        `client dropped: ${stall.dropped ? 'yes' : 'NO'}`,
    );
    console.log(
      `per one-call turn: Redis commands naming the portal's keys ${figure(cost.clientCommands)} sent by clients ` +
        `+ ${figure(cost.scriptCommands)} run inside their scripts; stored: Postgres +${figure(cost.postgresBytes / 1024)} KB, ` +
        `Redis +${figure(cost.redisBytes / 1024)} KB (events and retained jobs)`,
    );
    const ratio = percentile(many.latencies, 50) / percentile(few.latencies, 50);
    const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
    console.log(
      `targets: ≤ ${TARGETS.redisConnections} Redis connections added: ${met(many.redisConnectionsAdded <= TARGETS.redisConnections)}; ` +
        `≤ ${TARGETS.kbPerStream} KB per idle stream: ${met(many.bytesPerStream / 1024 <= TARGETS.kbPerStream)}; ` +
        `every subscriber served: ${met(many.subscribersServed === many.subscribersChecked && few.subscribersServed === few.subscribersChecked)}; ` +
        `p50 within ${TARGETS.p50Ratio}× of few (${figure(ratio, 2)}×): ${met(ratio <= TARGETS.p50Ratio)}; ` +
        `stalled reader dropped, RSS peak under half the data: ${met(stall.dropped && stall.peakGrowthMb < stall.publishedMb / 2)}`,
    );
  } catch (err) {
    console.error(
      `gateway log, last lines:\n${portal.logs.gateway
        .join('')
        .split('\n')
        .filter((l) => l.includes('"error"') || l.includes('"warn"'))
        .slice(0, 8)
        .join('\n')}`,
    );
    throw err;
  } finally {
    redis.disconnect();
    await portal.stop();
    await fake.close();
  }
}

if (require.main === module) runMain(main);
