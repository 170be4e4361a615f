import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Queue, Worker, type JobsOptions } from 'bullmq';
import Fastify from 'fastify';
import IORedis from 'ioredis';
import OpenAI from 'openai';
import { Client, Pool } from 'pg';
import type { ApiClient, EventSubscription } from '@portal/testing';
import { startChild } from './proc.util';
import { numberArg as arg, percentile, runMain } from './stats.util';
import {
  baselineTimes,
  concurrentTurns,
  cpuByService,
  cpuPerTurn,
  printCpuPerTurn,
  printLatencyRows,
  printLoadRows,
  printVerdicts,
  redisCommandsPerTurn,
  sequentialTurns,
  streamAnswer,
  warmUp,
  type ServiceCpu,
  type TargetFigures,
  type TurnTiming,
} from './turn-figures.util';

/**
 * `npm run bench:turn-floor`: the least a one-call turn of the target design can cost on this
 * machine, built from the libraries the portal uses (Fastify, pg, BullMQ, ioredis, openai) and none
 * of its code, so `npm run bench:turns` can be read against it (the same figure names, the same
 * method). Two child processes:
 *
 * - the "gateway": POST message = one statement (one transaction, one round trip) inserting the
 *   queued turn and the message, then `Queue.add`, then 202; GET events = an SSE stream fed by one
 *   shared ioredis SUBSCRIBE connection;
 * - the "orchestrator": a BullMQ Worker claiming the turn with one `UPDATE … RETURNING` joined to
 *   the messages of the last 20 turns, the `openai` SDK streaming from the fake model, one statement
 *   storing the answer + a usage row + settling the turn, the events in one pipelined PUBLISH.
 *
 * Left out, as parts of the portal rather than of the floor: API-key and conversation lookups,
 * agents and skills, titles, logging, tracing, metrics, replayable (stream) events.
 * Options as bench:turns: `--turns=N`, `--concurrency=N`, `--per-conversation=N`, `--warm-up=N`.
 */

const TURNS = arg('turns', 200);
const CONCURRENCY = arg('concurrency', 20);
const PER_CONVERSATION = arg('per-conversation', 15);
/** Turns before the measured ones (`warmUp`): about where the services' CPU per turn levels off. */
const WARM_UP_TURNS = arg('warm-up', 3000);
const AUTH = 'Bearer pk_floor';
const QUEUE = 'turns';
// The portal's turn options (libs/queue/src/job-options.ts), copied: they are the design's.
const JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 500 },
  removeOnComplete: 1000,
  removeOnFail: 5000,
};
const WORKER_OPTIONS = { concurrency: 20, lockDuration: 4_000, stalledInterval: 2_000, maxStalledCount: 5 };

// --- Schema and statements (the real tables' shape: libs/dal/src/migrations) ---------------------

const SCHEMA = `
CREATE TABLE turns (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  conversation_id uuid NOT NULL,
  n integer NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  effort text NOT NULL,
  model text NOT NULL,
  mcp_tools jsonb,
  attempt integer NOT NULL DEFAULT 0,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (conversation_id, n)
);
CREATE UNIQUE INDEX turns_one_active_idx ON turns (conversation_id) WHERE status IN ('queued', 'running');
-- The message's blocks live in its jsonb: one row per message, the floor of messages + blocks.
CREATE TABLE messages (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  conversation_id uuid NOT NULL,
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  turn_n integer NOT NULL,
  seq integer NOT NULL,
  role text NOT NULL CHECK (role IN ('user', 'assistant')),
  content jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (turn_id, seq)
);
CREATE INDEX messages_window_idx ON messages (conversation_id, turn_n);
CREATE TABLE usage_rows (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
  kind text NOT NULL,
  model text NOT NULL,
  input_tokens integer NOT NULL,
  output_tokens integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX usage_rows_turn_idx ON usage_rows (turn_id);`;

/** $1 conversation, $2 content. A second active turn breaks turns_one_active_idx (409). */
const OPEN_TURN = `
WITH turn AS (
  INSERT INTO turns (conversation_id, n, status, effort, model)
  SELECT $1, coalesce(max(n), 0) + 1, 'queued', 'low', 'fast' FROM turns WHERE conversation_id = $1
  RETURNING id, n)
INSERT INTO messages (conversation_id, turn_id, turn_n, seq, role, content)
SELECT $1, id, n, 0, 'user', $2::jsonb FROM turn RETURNING turn_id`;

/** $1 turn. No rows: the turn is not queued (settled, or another attempt holds it). */
const CLAIM = `
WITH claimed AS (
  UPDATE turns SET status = 'running', attempt = attempt + 1,
         lease_expires_at = now() + interval '4 seconds', updated_at = now()
   WHERE id = $1 AND status = 'queued'
  RETURNING conversation_id, n, model)
SELECT c.conversation_id, c.model, m.role, m.content
  FROM claimed c JOIN messages m ON m.conversation_id = c.conversation_id AND m.turn_n > c.n - 20
 ORDER BY m.turn_n, m.seq`;

/** $1 turn, $2 answer content, $3 input tokens, $4 output tokens. */
const SETTLE = `
WITH settled AS (
  UPDATE turns SET status = 'completed', lease_expires_at = NULL, updated_at = now()
   WHERE id = $1 AND status = 'running'
  RETURNING id, conversation_id, n, model),
answer AS (
  INSERT INTO messages (conversation_id, turn_id, turn_n, seq, role, content)
  SELECT conversation_id, id, n, 1, 'assistant', $2::jsonb FROM settled)
INSERT INTO usage_rows (turn_id, kind, model, input_tokens, output_tokens)
SELECT id, 'turn', model, $3, $4 FROM settled`;

// --- The two services (child processes: this file with `gateway` or `orchestrator`) -------------

const env = (name: string) => process.env[name] ?? '';
const channelOf = (conversationId: string) => `${env('FLOOR_PREFIX')}:events:${conversationId}`;
/** idleTimeoutMillis 0: a backend that exits mid-run would take its CPU time out of the count. */
const pool = () => new Pool({ connectionString: env('FLOOR_DB'), max: 10, idleTimeoutMillis: 0 });
const redis = (options = {}) => new IORedis(env('REDIS_URL'), options);

async function gateway(): Promise<number> {
  const db = pool();
  const queue = new Queue(QUEUE, { connection: redis(), prefix: env('FLOOR_PREFIX') });
  const subscriber = redis();
  const streams = new Map<string, { clients: Set<ServerResponse>; subscribed: Promise<unknown> }>();
  let eventId = 0;
  subscriber.on('message', (channel: string, message: string) => {
    for (const res of streams.get(channel)?.clients ?? [])
      res.write(`id: ${++eventId}\ndata: ${message}\n\n`);
  });

  const app = Fastify();
  const params = { type: 'object', properties: { id: { type: 'string', format: 'uuid' } } };
  app.post<{ Params: { id: string }; Body: { text: string } }>(
    '/v1/conversations/:id/messages',
    {
      schema: {
        params,
        body: {
          type: 'object',
          required: ['text'],
          properties: { text: { type: 'string', maxLength: 20_000 } },
        },
        response: { 202: { type: 'object', properties: { turnId: { type: 'string' } } } },
      },
    },
    async (req, reply) => {
      if (req.headers.authorization !== AUTH) return reply.code(401).send();
      const content = JSON.stringify([{ kind: 'text', text: req.body.text }]);
      const opened = await db
        .query({ name: 'open', text: OPEN_TURN, values: [req.params.id, content] })
        .catch((err: { code?: string }) => (err.code === '23505' ? null : Promise.reject(err)));
      if (!opened) return reply.code(409).send();
      const turnId = opened.rows[0].turn_id as string;
      await queue.add('turn', { turnId }, { ...JOB_OPTIONS, jobId: turnId });
      return reply.code(202).send({ turnId });
    },
  );
  app.get<{ Params: { id: string } }>(
    '/v1/conversations/:id/events',
    { schema: { params } },
    async (req, reply) => {
      if (req.headers.authorization !== AUTH) return reply.code(401).send();
      const channel = channelOf(req.params.id);
      let stream = streams.get(channel);
      if (!stream)
        streams.set(channel, (stream = { clients: new Set(), subscribed: subscriber.subscribe(channel) }));
      // Headers only once subscribed: a client that has them may post, and will see every event.
      await stream.subscribed;
      reply.hijack();
      const res = reply.raw;
      stream.clients.add(res);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      res.on('close', () => {
        stream.clients.delete(res);
        if (stream.clients.size === 0 && streams.get(channel) === stream) {
          streams.delete(channel);
          void subscriber.unsubscribe(channel);
        }
      });
    },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

async function orchestrator(): Promise<number> {
  const db = pool();
  const publisher = redis();
  const model = new OpenAI({ baseURL: env('FLOOR_MODEL_URL'), apiKey: 'none', maxRetries: 0 });
  const runTurn = async (turnId: string) => {
    const claimed = await db.query({ name: 'claim', text: CLAIM, values: [turnId] });
    if (claimed.rows.length === 0) return;
    const channel = channelOf(claimed.rows[0].conversation_id);
    // Not awaited before the model call: one connection keeps the order of the events.
    const running = publisher.publish(
      channel,
      JSON.stringify({ type: 'turn_state', status: 'running', turnId }),
    );
    const { text, usage } = await streamAnswer(model, {
      model: claimed.rows[0].model,
      messages: [
        { role: 'system', content: 'Answer briefly.' },
        ...claimed.rows.map((r: { role: 'user' | 'assistant'; content: { text: string }[] }) => ({
          role: r.role,
          content: r.content.map((b) => b.text).join(''),
        })),
      ],
    });
    const block = { kind: 'text', seq: 1, text };
    const values = [
      turnId,
      JSON.stringify([block]),
      usage?.prompt_tokens ?? 0,
      usage?.completion_tokens ?? 0,
    ];
    const settled = await db.query({ name: 'settle', text: SETTLE, values });
    if (settled.rowCount !== 1) throw new Error(`turn ${turnId} was no longer running`);
    await running;
    await publisher
      .pipeline()
      .publish(channel, JSON.stringify({ type: 'block_finished', turnId, block }))
      .publish(channel, JSON.stringify({ type: 'turn_finished', turnId, status: 'completed' }))
      .exec();
  };
  const worker = new Worker(QUEUE, (job) => runTurn(job.data.turnId), {
    connection: redis({ maxRetriesPerRequest: null }),
    prefix: env('FLOOR_PREFIX'),
    ...WORKER_OPTIONS,
  });
  await worker.waitUntilReady();
  return 0;
}

// --- The bench (the parent process) --------------------------------------------------------------

/** As bench:turns' client: an SSE stream kept open, then POST and wait for turn_finished on it. */
async function turn(
  api: ApiClient,
  conversation: string,
  events: EventSubscription,
  marker: string,
): Promise<TurnTiming> {
  const from = events.events.length;
  const postedAt = performance.now();
  const res = await api.post(`/v1/conversations/${conversation}/messages`, {
    text: `[bench:${marker}] Say OK.`,
  });
  const acceptedAt = performance.now();
  if (res.status !== 202) throw new Error(`message: ${res.status} ${JSON.stringify(res.body)}`);
  const finish = await events.waitFor(
    (e) => e.data.type === 'turn_finished' && e.data.turnId === res.body.turnId,
    {
      from,
      timeoutMs: 30_000,
    },
  );
  return {
    marker,
    postedAt,
    acceptedAt,
    latencyMs: performance.now() - postedAt,
    status: finish.data.status,
  };
}

/** The floor's figures, with its processes' CPU per turn under load, as bench:turns prints the portal's. */
export interface FloorFigures extends TargetFigures {
  cpu: ServiceCpu;
}

/**
 * One run of the floor on fresh processes, database and Redis prefix: prints its figures and
 * returns those issue #29 sets targets for (bench:turns runs it beside each of its own runs).
 */
export async function runFloor(): Promise<FloorFigures> {
  // Imported here, not at the top: the children load this file and must hold none of the portal.
  const { ApiClient, deleteRedisPrefix, startFakeOpenAI, subscribeEvents } = await import('@portal/testing');
  const { readRedisUrl } = await import('@portal/contracts');
  const { dropDatabase, ensureDatabase } = await import('@portal/dal');
  const { turnAccounts } = await import('./cpu.util');
  const { startTimingProxy } = await import('./timing-proxy.util');

  const serverUrl = new URL(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/portal');
  const dbUrl = new URL(`/turn_floor_${randomUUID().slice(0, 8)}`, serverUrl).href;
  await ensureDatabase(dbUrl);
  const prefix = `floor-${randomUUID().slice(0, 8)}`;
  const redisUrl = readRedisUrl(process.env);
  const fake = await startFakeOpenAI({ defaultResponder: () => 'OK.' });
  const proxy = await startTimingProxy(fake.baseURL, (body) => ({
    marker: [...body.toString('utf8').matchAll(/\[bench:([\w-]+)\]/g)].at(-1)?.[1] ?? null,
  }));
  const pg = new Client({ connectionString: dbUrl });
  const children: ChildProcess[] = [];
  const streams: EventSubscription[] = [];
  try {
    await pg.connect();
    await pg.query(SCHEMA);
    const childEnv = {
      FLOOR_DB: dbUrl,
      FLOOR_PREFIX: prefix,
      FLOOR_MODEL_URL: proxy.url,
      REDIS_URL: redisUrl,
    };
    const gw = await startChild(__filename, 'gateway', childEnv);
    const orch = await startChild(__filename, 'orchestrator', childEnv);
    children.push(gw.child, orch.child);
    const baseURL = `http://127.0.0.1:${gw.port}`;
    const api = new ApiClient(baseURL, AUTH.slice('Bearer '.length));
    const open = async () => {
      const id = randomUUID();
      const events = await subscribeEvents(`${baseURL}/v1/conversations/${id}/events`, api.apiKey!);
      streams.push(events);
      return { id, events };
    };
    /** CPU ms so far per process, as bench:turns counts them, and Redis's command count. */
    const accounts = () => turnAccounts(pg, { gateway: gw.child.pid, orchestrator: orch.child.pid });
    const send = (c: { id: string; events: EventSubscription }, marker: string) =>
      turn(api, c.id, c.events, marker);

    console.log(
      `load average at start: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    // As bench:turns warms up.
    await warmUp(WARM_UP_TURNS, CONCURRENCY, PER_CONVERSATION, open, send);

    // 1. Baseline (bench:turns' method): the floor's last model request, replayed by the SDK straight
    //    to the fake (through the proxy).
    const { stream: _s, stream_options: _o, ...request } = fake.requests.at(-1)!.body;
    const baseTimes = await baselineTimes(proxy.url, request, TURNS);

    // 2. Latency: one turn at a time.
    const beforeSequential = await accounts();
    const sequential = await sequentialTurns(TURNS, open, send);
    const afterSequential = await accounts();
    const modelMs = new Map(proxy.timings.filter((t) => t.marker).map((t) => [t.marker!, t.ms]));

    // 3. Throughput: CONCURRENCY conversations, each sending its turns one after another.
    const parallel = await Promise.all(Array.from({ length: CONCURRENCY }, open));
    await Promise.all(parallel.map((c, i) => send(c, `tp-warm-${i}`)));
    const beforeLoad = await accounts();
    const load = await concurrentTurns(parallel, PER_CONVERSATION, send);
    const afterLoad = await accounts();
    const loaded = load.samples;

    // --- Report: bench:turns' figure names, the issue's targets beside them ----------------------
    const addedPerTurn = printLatencyRows('floor', baseTimes, sequential, modelMs, true);
    const turnsPerSecond = printLoadRows(CONCURRENCY, load, true);
    const failed = [...sequential, ...loaded].filter((s) => s.status !== 'completed').length;
    console.log(`turns not completed: ${failed}`);

    const loadCpu = cpuPerTurn(beforeLoad, afterLoad, loaded.length);
    const floorCpu = printCpuPerTurn(
      cpuPerTurn(beforeSequential, afterSequential, sequential.length),
      loadCpu,
      [
        redisCommandsPerTurn(beforeSequential, afterSequential, sequential.length),
        redisCommandsPerTurn(beforeLoad, afterLoad, loaded.length),
      ],
    );
    const figures = {
      addedP50: percentile(addedPerTurn, 50),
      addedP99: percentile(addedPerTurn, 99),
      turnsPerSecond,
      cpuPerTurn: floorCpu,
    };
    printVerdicts(figures);
    console.log(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    return { ...figures, cpu: cpuByService(loadCpu) };
  } finally {
    for (const s of streams) s.close();
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(
      children.map((c) => new Promise((r) => (c.exitCode !== null ? r(0) : c.once('exit', r)))),
    );
    await pg.end().catch(() => undefined);
    await deleteRedisPrefix(redisUrl, prefix); // the queue's keys
    await dropDatabase(dbUrl);
    proxy.server.closeAllConnections();
    proxy.server.close();
    await fake.close();
  }
}

const role = process.argv[2];
if (role === 'gateway' || role === 'orchestrator') {
  // A child: says it is ready (with its port), and ends with the bench (SIGTERM or a lost parent).
  process.on('SIGTERM', () => process.exit(0));
  process.on('disconnect', () => process.exit(0));
  (role === 'gateway' ? gateway() : orchestrator()).then(
    (port) => process.send!({ port }),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
} else if (require.main === module) runMain(runFloor);
