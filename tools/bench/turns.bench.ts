import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import type { PortalEvent } from '@portal/contracts';
import {
  ApiClient,
  e2eModels,
  startFakeOpenAI,
  startOtlpReceiver,
  startPortal,
  subscribeEvents,
  type EventSubscription,
  type FakeOpenAI,
  type FakeRequest,
  type FakeScript,
  type OtlpReceiver,
  type RunningPortal,
  type SseEvent,
} from '@portal/testing';
import { turnAccounts, type TurnAccounts } from './cpu.util';
import { figure, median, numberArg as arg, percentile, runMain } from './stats.util';
import { epochMs, startTimingProxy } from './timing-proxy.util';
import {
  baselineTimes,
  cell,
  concurrentTurns,
  cpuByService,
  cpuPerTurn,
  printCpuPerTurn,
  printLatencyRows,
  printLoadRows,
  printPercentiles,
  printVerdicts,
  redisCommandsPerTurn,
  sequentialTurns,
  TURN_TARGETS,
  warmUp,
  WIDTH,
  type ServiceCpu,
  type TurnTiming,
} from './turn-figures.util';
import { buildServices } from './build.util';
import { type FloorFigures, runFloor } from './turn-floor.bench';

/**
 * `npm run bench:turns`: what the portal adds to a model call. The built services run as real
 * processes (like the end-to-end tests) on a fresh database and Redis prefix, with an instant fake
 * model behind a small timing proxy. After 3,000 turns that warm the services up (`--warm-up=N`;
 * `warmUp`), three measurements:
 *
 * 1. baseline: the `openai` SDK streaming the same request straight to the fake (through the proxy);
 * 2. latency: 200 one-call turns one after another, from POST message to the client receiving the
 *    `turn_finished` SSE event; the added time per turn is that latency minus the time the proxy
 *    saw the turn's model call take;
 *    Then 30 turns whose model streams its words 20 ms apart: the model's first text chunk (when
 *    the proxy passed it on) to the client's first `text_delta`;
 * 3. throughput: 20 conversations sending turns concurrently, turns per second.
 *
 * Then where the time goes: each turn's phases from the stream ids (Redis server milliseconds) of
 * its events, and the CPU time each process spent per turn (Linux /proc).
 * It all runs `--runs=N` times (default 3), each on fresh services and each followed by a run of
 * `bench:turn-floor` (the design's floor on the same machine, in the same minutes; `--no-floor`
 * leaves it out), and ends with each run's headline figures beside the floor's, their median, the
 * portal's over the floor's, and the targets.
 * Options: `--turns=N`, `--concurrency=N`, `--per-conversation=N`, `--warm-up=N`; `--db` also
 * counts Postgres transactions and row operations per turn (waits for the statistics to be
 * flushed: +45 s);
 * `--profile` samples the gateway's and the orchestrator's CPU (cpu-profile.preload.js) and prints
 * where their CPU time went (the profiler slows them: read its latencies as such).
 * `--tracing` runs it all twice, tracing off then on (every service exporting OTLP/HTTP protobuf
 * to a receiver in this process), and prints the two side by side.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const TURNS = arg('turns', 200);
const CONCURRENCY = arg('concurrency', 20);
const PER_CONVERSATION = arg('per-conversation', 15);
/** Turns before the measured ones (`warmUp`): about where the services' CPU per turn levels off. */
const WARM_UP_TURNS = arg('warm-up', 3000);
/** Marker prefix and count of the turns whose model streams slowly, to time the first text. */
const FIRST_TEXT = 'ft-';
const FIRST_TEXT_TURNS = 30;
const API_KEY = 'pk_bench_user_key';
/** Whole runs; the summary prints each run's figures and their median. */
const RUNS = arg('runs', 3);
const DB_STATS = process.argv.includes('--db');
const PROFILE = process.argv.includes('--profile');
const TRACING = process.argv.includes('--tracing');
const FLOOR = !process.argv.includes('--no-floor');

// --- Timing proxy in front of the fake model -------------------------------------------------

interface CallDescription {
  /** The last `[bench:…]` marker in the request, naming the turn. */
  marker: string | null;
  title: boolean;
}

/** What the proxy records of each model call. */
function describeCall(body: Buffer): CallDescription {
  const text = body.toString('utf8');
  // The newest marker: memory replays the conversation's earlier messages before it.
  const marker = [...text.matchAll(/\[bench:([\w-]+)\]/g)].at(-1)?.[1] ?? null;
  return { marker, title: text.includes('You name conversations') };
}

/** The instant answer; for a first-text turn, an answer whose words come 20 ms apart. */
function answerFor(request: FakeRequest): FakeScript {
  const last = JSON.stringify(request.body?.messages?.at(-1) ?? '');
  return last.includes(`[bench:${FIRST_TEXT}`)
    ? { text: 'OK. The rest of the answer follows.', chunkSize: 4, delayMs: 20 }
    : 'OK.';
}

// --- The portal --------------------------------------------------------------------------------

function bootstrap() {
  return {
    portalFloor: 'You are the bench assistant.',
    orgs: [
      {
        id: 'bench',
        users: [{ id: 'bencher', role: 'author', apiKey: API_KEY }],
        agents: [
          { id: 'bench', name: 'Bench', instructions: 'Answer briefly.', model: 'fast', effort: 'low' },
        ],
      },
    ],
  };
}

interface TurnSample extends TurnTiming {
  turnId: string;
  /**
   * Client clock at turn_finished, ms since epoch (performance.timeOrigin based), as postedAt and
   * acceptedAt are.
   */
  finishedAt: number;
  events: SseEvent[];
  /** Client clock when the turn's first text delta arrived. */
  firstTextAt: number;
}

class BenchConversation {
  constructor(
    readonly id: string,
    readonly api: ApiClient,
    readonly events: EventSubscription,
  ) {}

  static async open(portal: RunningPortal, api: ApiClient): Promise<BenchConversation> {
    const created = await api.post('/v1/conversations', { agentId: 'bench' });
    if (created.status !== 201)
      throw new Error(`conversation: ${created.status} ${JSON.stringify(created.body)}`);
    const events = await subscribeEvents(
      `${portal.baseURL}/v1/conversations/${created.body.id}/events`,
      API_KEY,
    );
    return new BenchConversation(created.body.id, api, events);
  }

  async turn(marker: string): Promise<TurnSample> {
    const from = this.events.events.length;
    const postedAt = epochMs();
    const res = await this.api.post(`/v1/conversations/${this.id}/messages`, {
      text: `[bench:${marker}] Say OK.`,
    });
    const acceptedAt = epochMs();
    if (res.status !== 202 || res.body.steered)
      throw new Error(`message: ${res.status} ${JSON.stringify(res.body)}`);
    const turnId = res.body.turnId as string;
    const firstText = this.events
      .waitFor((e) => e.data.type === 'text_delta' && e.data.turnId === turnId, { from, timeoutMs: 30_000 })
      .then(epochMs);
    const finish = await this.events.waitFor(
      (e) => e.data.type === 'turn_finished' && e.data.turnId === turnId,
      {
        from,
        timeoutMs: 30_000,
      },
    );
    const finishedAt = epochMs();
    return {
      turnId,
      postedAt,
      acceptedAt,
      finishedAt,
      latencyMs: finishedAt - postedAt,
      status: finish.data.status,
      events: this.events.events.slice(from).filter((e) => e.data.turnId === turnId),
      marker,
      firstTextAt: await firstText,
    };
  }

  close() {
    this.events.close();
  }
}

// --- Resources ---------------------------------------------------------------------------------

interface Accounts extends TurnAccounts {
  /** Writes so far of each service, by where they went (io-count.preload.js). */
  writes: Record<string, Record<string, number>>;
}

const COUNTED_APPS = ['gateway', 'turn-orchestrator'] as const;

/** The service's write counts so far: SIGURG has the preload write them to `dir`. */
async function writesOf(dir: string, pid: number | undefined): Promise<Record<string, number>> {
  if (!pid) return {};
  const file = path.join(dir, `${pid}.json`);
  rmSync(file, { force: true });
  process.kill(pid, 'SIGURG');
  for (let waited = 0; waited < 2_000; waited += 5) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
    } catch {
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  return {};
}

/** The services' writes so far, then CPU time so far of the portal's processes (turnAccounts). */
async function accounts(portal: RunningPortal, pg: Client, countDir: string): Promise<Accounts> {
  const writes: Accounts['writes'] = {};
  for (const app of COUNTED_APPS) writes[app] = await writesOf(countDir, portal.pid(app));
  const pids = { gateway: portal.pid('gateway'), orchestrator: portal.pid('turn-orchestrator') };
  return { writes, ...(await turnAccounts(pg, pids)) };
}

/** Per turn, each service's writes by where they went. */
function writesPerTurn(before: Accounts, after: Accounts, turns: number): [string, number][] {
  return COUNTED_APPS.flatMap((app) => {
    const a = after.writes[app] ?? {};
    const b = before.writes[app] ?? {};
    return Object.keys(a)
      .sort()
      .map((where): [string, number] => [`${app} → ${where}`, (a[where] - (b[where] ?? 0)) / turns]);
  });
}

interface DbCounters {
  commits: number;
  rollbacks: number;
  inserted: number;
  updated: number;
  deleted: number;
  returned: number;
  fetched: number;
  scans: number;
  /** Per table: sequential scans, rows they read, index scans, rows inserted + updated. */
  tables: Record<string, { seq: number; seqRead: number; idx: number; written: number }>;
}

/** The bench database's counters (flushed by each backend at least 10 s after its last work). */
async function dbCounters(pg: Client): Promise<DbCounters> {
  const db = await pg.query(
    `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched
       FROM pg_stat_database WHERE datname = current_database()`,
  );
  const tables = await pg.query(
    `SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, n_tup_ins + n_tup_upd AS written
       FROM pg_stat_user_tables`,
  );
  const r = db.rows[0];
  return {
    commits: Number(r.xact_commit),
    rollbacks: Number(r.xact_rollback),
    inserted: Number(r.tup_inserted),
    updated: Number(r.tup_updated),
    deleted: Number(r.tup_deleted),
    returned: Number(r.tup_returned),
    fetched: Number(r.tup_fetched),
    scans: tables.rows.reduce((n, t) => n + Number(t.seq_scan) + Number(t.idx_scan), 0),
    tables: Object.fromEntries(
      tables.rows.map((t) => [
        t.relname,
        {
          seq: Number(t.seq_scan),
          seqRead: Number(t.seq_tup_read),
          idx: Number(t.idx_scan),
          written: Number(t.written),
        },
      ]),
    ),
  };
}

/** Waits until every backend has flushed its statistics (PGSTAT_IDLE_INTERVAL is 10 s). */
const statsSettle = () => new Promise((r) => setTimeout(r, 11_000));

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** Where a frame's code lives: a package, an app or lib of the portal, or Node itself. */
function areaOf(url: string): string | null {
  if (url === '') return null;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  const portal = /dist\/((?:apps|libs)\/[\w-]+)/.exec(url)?.[1];
  if (portal) return portal;
  return url.startsWith('node:') ? 'node internals' : 'other';
}

/**
 * Where the CPU time went in the `.cpuprofile` files of `dir`: by package (native frames such as
 * socket writes are charged to the nearest caller with code of its own) and by function.
 */
function summariseProfiles(dir: string, top = 12): string[] {
  const lines: string[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as {
      nodes: ProfileNode[];
      samples: number[];
      timeDeltas: number[];
    };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const rel = (url: string) => url.replace(/^file:\/\//, '').replace(ROOT + '/', '');
    /** The first package or portal frame from this node up, skipping Node's own frames. */
    const owner = (id: number): string => {
      let node: number | undefined = id;
      let fallback: string | null = null;
      while (node !== undefined) {
        const area = areaOf(rel(byId.get(node)!.callFrame.url));
        if (area && area !== 'node internals' && area !== 'other') return area;
        fallback ??= area;
        node = parent.get(node);
      }
      return fallback ?? byId.get(id)!.callFrame.functionName;
    };
    const self = new Map<string, number>();
    const byArea = new Map<string, number>();
    let total = 0;
    let idle = 0;
    profile.samples.forEach((id, i) => {
      const dt = profile.timeDeltas[i] ?? 0;
      const frame = byId.get(id)!.callFrame;
      total += dt;
      if (frame.functionName === '(idle)') {
        idle += dt;
        return;
      }
      const url = rel(frame.url);
      const key =
        `${frame.functionName || '(anonymous)'} ${url ? `${url}:${frame.lineNumber + 1}` : ''}`.trim();
      self.set(key, (self.get(key) ?? 0) + dt);
      const area = owner(id);
      byArea.set(area, (byArea.get(area) ?? 0) + dt);
    });
    const busy = total - idle;
    const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
    lines.push(
      `\n${file}: ${(busy / 1000).toFixed(0)} ms busy of ${(total / 1000).toFixed(0)} ms sampled (shares of busy time)`,
    );
    lines.push('  by package or part of the portal (native work charged to its caller):');
    for (const [area, us] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, top))
      lines.push(`  ${pct(us)}  ${area}`);
    lines.push('  by function (self time):');
    for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
      lines.push(`  ${pct(us)}  ${key}`);
  }
  return lines;
}

// --- Measurements ------------------------------------------------------------------------------

/** Milliseconds of a Redis stream id (the Redis server's clock, the same host as the client). */
const streamMs = (id: string) => Number(id.split('-')[0]);

interface Phases {
  open: number;
  pickUp: number;
  modelStart: number;
  storeAnswer: number;
  settle: number;
  deliver: number;
}

/**
 * Where one turn's time went, from its events' stream ids and the model call's arrival at the
 * proxy (`calledAt`). `running` goes out with the turn's first block when the model answers at
 * once (its linger), so the model call, not `running`, marks the end of the pick-up. Null when an
 * event or the call is missing.
 */
function phases(sample: TurnSample, calledAt: number | undefined): Phases | null {
  const at = (test: (d: PortalEvent) => boolean) => {
    const e = sample.events.find((x) => test(x.data));
    return e ? streamMs(e.id) : null;
  };
  const queued = at((d) => d.type === 'turn_state' && d.status === 'queued');
  const firstBlock = at((d) => d.type === 'block_started');
  const answer = at((d) => d.type === 'block_finished' && d.block.kind === 'text' && d.block.seq > 1);
  const finished = at((d) => d.type === 'turn_finished');
  if (calledAt === undefined || [queued, firstBlock, answer, finished].some((v) => v === null)) return null;
  return {
    open: queued! - sample.postedAt,
    pickUp: calledAt - queued!,
    modelStart: firstBlock! - calledAt,
    storeAnswer: answer! - firstBlock!,
    settle: finished! - answer!,
    deliver: sample.finishedAt - finished!,
  };
}

/**
 * Turns whose events did not arrive as turn_started, turn_state queued, …, turn_finished. The
 * title call's usage follows a conversation's first turn by design (turn protocol, step 7).
 */
function orderProblems(samples: TurnSample[]): string[] {
  return samples.flatMap((s) => {
    const seen = s.events
      .filter((e) => !(e.data.type === 'usage' && e.data.row.kind === 'summary'))
      .map((e) => (e.data.type === 'turn_state' ? `turn_state ${e.data.status}` : e.data.type));
    const queued = seen.indexOf('turn_state queued');
    const running = seen.indexOf('turn_state running');
    const ok =
      seen[0] === 'turn_started' && seen.at(-1) === 'turn_finished' && queued >= 0 && queued < running;
    return ok ? [] : [`${s.turnId}: ${seen.slice(0, 6).join(', ')}, …, ${seen.slice(-2).join(', ')}`];
  });
}

/** A run's headline figures: the summary of runs, and tracing off against on. */
interface Summary {
  addedP50: number;
  addedP99: number;
  loadedP50: number;
  turnsPerSecond: number;
  /** CPU ms per turn under load of the gateway and the orchestrator. */
  serviceCpu: number;
  /** CPU ms per turn under load of the gateway, the orchestrator and Postgres. */
  portalCpu: number;
  /** CPU ms per turn under load of each of them. */
  cpu: ServiceCpu;
  /** Model's first text chunk → the client's first text delta, p50 ms. */
  firstTextP50: number;
  /** Writes per turn (sequential) of the gateway and the orchestrator, every destination. */
  writes: number;
  /** Writes per turn (sequential) to Postgres of each service: its round trips. */
  postgresWrites: { gateway: number; orchestrator: number };
  /** Writes per turn (sequential) to Redis of each service. */
  redisWrites: { gateway: number; orchestrator: number };
  /** Commands per turn (sequential) the Redis server ran (whole server). */
  redisCommands: number;
}

/** One whole run; with `receiver`, every service exports its spans to it. */
async function bench(receiver: OtlpReceiver | null): Promise<Summary> {
  const fake: FakeOpenAI = await startFakeOpenAI({ defaultResponder: answerFor });
  const proxy = await startTimingProxy(fake.baseURL, describeCall);
  const profileDir = PROFILE ? mkdtempSync(path.join(tmpdir(), 'portal-bench-prof-')) : null;
  const countDir = mkdtempSync(path.join(tmpdir(), 'portal-bench-io-'));
  const preloads = ['io-count.preload.js', ...(profileDir ? ['cpu-profile.preload.js'] : [])];
  console.log('starting the portal (built services, fresh database and Redis prefix)…');
  const portal = await startPortal({
    models: e2eModels(proxy.url),
    bootstrap: bootstrap(),
    // The services' defaults (log level included: LOG_LEVEL passes through when set), except the
    // per-key request limit and the per-user stream cap: one key sends every request here.
    env: {
      RATE_LIMIT_PER_MINUTE: '1000000',
      SSE_MAX_PER_USER: '0',
      ...(receiver && { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }),
      NODE_OPTIONS: preloads.map((file) => `--require ${path.join(__dirname, file)}`).join(' '),
      BENCH_IO_COUNT_DIR: countDir,
      ...(profileDir && { BENCH_CPU_PROFILE_DIR: profileDir }),
    },
  });
  const api = new ApiClient(portal.baseURL, API_KEY);
  const conversations: BenchConversation[] = [];
  const pg = new Client({ connectionString: portal.database.url });
  await pg.connect();
  try {
    const open = async () => {
      const c = await BenchConversation.open(portal, api);
      conversations.push(c);
      return c;
    };
    const send = (c: BenchConversation, marker: string) => c.turn(marker);
    // Warm up: connections, JIT, title calls.
    await warmUp(WARM_UP_TURNS, CONCURRENCY, PER_CONVERSATION, open, send);

    // 1. Baseline: the very request the portal sent for a turn, straight to the fake.
    const portalRequest = fake.requests.filter((r) => r.body?.tools).at(-1)!.body;
    const { stream: _s, stream_options: _o, ...request } = portalRequest;
    const baseTimes = await baselineTimes(proxy.url, request, TURNS);

    // 2. Latency: one turn at a time.
    if (profileDir)
      for (const app of ['gateway', 'turn-orchestrator'] as const) process.kill(portal.pid(app)!, 'SIGWINCH');
    const beforeSequential = await accounts(portal, pg, countDir);
    const sequential = await sequentialTurns(TURNS, open, send);
    const afterSequential = await accounts(portal, pg, countDir);

    // 2b. First text: the model's first text chunk (as the proxy passed it on) → the client's
    // first text_delta, with the rest of the answer still streaming.
    const slow = await open();
    const firstTextSamples: TurnSample[] = [];
    for (let i = 0; i < FIRST_TEXT_TURNS; i++) firstTextSamples.push(await slow.turn(`${FIRST_TEXT}${i}`));
    const proxyFirstText = new Map(proxy.timings.map((t) => [t.marker, t.firstTextAt]));
    const firstTextAdded = firstTextSamples.map((s) => s.firstTextAt - (proxyFirstText.get(s.marker) ?? NaN));

    // 3. Throughput: CONCURRENCY conversations, each sending its turns one after another.
    const parallel = await Promise.all(Array.from({ length: CONCURRENCY }, open));
    // Their first turns (and title calls) before the clock starts, so every conversation is warm.
    await Promise.all(parallel.map((c, i) => c.turn(`tp-warm-${i}`)));
    const beforeLoad = await accounts(portal, pg, countDir);
    const load = await concurrentTurns(parallel, PER_CONVERSATION, send);
    const afterLoad = await accounts(portal, pg, countDir);
    const loaded = load.samples;

    // 4. Optional: Postgres work per turn, on 50 more sequential turns between flushed statistics.
    let db: { turns: number; before: DbCounters; after: DbCounters } | null = null;
    if (DB_STATS) {
      const c = await open();
      await c.turn('db-warm'); // turn 1 (and its title call) out of the count
      await statsSettle();
      const before = await dbCounters(pg);
      for (let i = 0; i < 50; i++) await c.turn(`db-${i}`);
      await statsSettle();
      db = { turns: 50, before, after: await dbCounters(pg) };
    }

    // --- Report --------------------------------------------------------------------------------
    // Every turn's model call by now, the load's included (title calls are not the turn's).
    const turnCalls = proxy.timings.filter((t) => !t.title && t.marker);
    const modelMs = new Map(turnCalls.map((t) => [t.marker!, t.ms]));
    const calledAt = new Map(turnCalls.map((t) => [t.marker!, t.arrivedAt]));
    const all = [...sequential, ...loaded];
    const failed = all.filter((s) => s.status !== 'completed').length;
    const addedPerTurn = printLatencyRows('portal', baseTimes, sequential, modelMs);
    printPercentiles(
      `first text: model's first chunk → client's first delta (${firstTextAdded.length})`,
      firstTextAdded,
    );
    const turnsPerSecond = printLoadRows(CONCURRENCY, load);
    const disordered = orderProblems(all);
    console.log(
      `turns not completed: ${failed}; turns whose events arrived out of order: ${disordered.length}`,
    );
    for (const line of disordered.slice(0, 5)) console.log(`  ${line}`);

    for (const [label, samples] of [
      ['sequential', sequential],
      [`${CONCURRENCY} concurrent`, loaded],
    ] as const) {
      const parts = samples
        .map((s) => phases(s, calledAt.get(s.marker)))
        .filter((p): p is Phases => p !== null);
      console.log(
        `\nwhere the time goes, ${label} (ms, from the events' stream ids and the model call's arrival; ${parts.length} turns):`,
      );
      const names: [keyof Phases, string][] = [
        ['open', 'POST → `queued` published (auth, checks, tx)'],
        ['pickUp', '`queued` → model called (enqueue, pick-up, claim, assemble)'],
        ['modelStart', 'model called → block_started (its answer, the block stored)'],
        ['storeAnswer', 'block_started → answer stored (stream, tx)'],
        ['settle', 'answer stored → turn_finished (settle tx)'],
        ['deliver', 'turn_finished → at the client (SSE)'],
      ];
      for (const [key, text] of names)
        printPercentiles(
          `  ${text}`,
          parts.map((p) => p[key]),
        );
    }

    const loadCpu = cpuPerTurn(beforeLoad, afterLoad, loaded.length);
    const seqCommands = redisCommandsPerTurn(beforeSequential, afterSequential, sequential.length);
    const portalCpu = printCpuPerTurn(
      cpuPerTurn(beforeSequential, afterSequential, sequential.length),
      loadCpu,
      [seqCommands, redisCommandsPerTurn(beforeLoad, afterLoad, loaded.length)],
    );

    const seqWrites = writesPerTurn(beforeSequential, afterSequential, sequential.length);
    const loadWrites = new Map(writesPerTurn(beforeLoad, afterLoad, loaded.length));
    console.log(
      `\nWrites per turn (each a system call; to Postgres and Redis, a round trip)${''.padEnd(WIDTH - 73)}${'seq'.padStart(8)}${'load'.padStart(8)}`,
    );
    for (const [name, n] of seqWrites)
      console.log(`  ${name.padEnd(WIDTH - 2)}${cell(n)}${cell(loadWrites.get(name) ?? NaN)}`);

    if (db) {
      const d = (k: Exclude<keyof DbCounters, 'tables'>) =>
        ((db!.after[k] - db!.before[k]) / db!.turns).toFixed(1).padStart(7);
      console.log(
        `\nPostgres per one-call turn (${db.turns} sequential turns, statistics flushed before and after):`,
      );
      console.log(`  transactions committed ${d('commits')}   rolled back ${d('rollbacks')}`);
      console.log(`  rows inserted ${d('inserted')}   updated ${d('updated')}   deleted ${d('deleted')}`);
      console.log(
        `  table scans (seq + index) ${d('scans')}   rows returned ${d('returned')}   fetched ${d('fetched')}`,
      );
      console.log('  per table, per turn:          seq scans  rows they read  index scans  rows written');
      const per = (table: string, k: 'seq' | 'seqRead' | 'idx' | 'written') =>
        ((db!.after.tables[table]?.[k] ?? 0) - (db!.before.tables[table]?.[k] ?? 0)) / db!.turns;
      const tables = Object.keys(db.after.tables)
        .map((t) => ({
          t,
          seq: per(t, 'seq'),
          read: per(t, 'seqRead'),
          idx: per(t, 'idx'),
          w: per(t, 'written'),
        }))
        .filter((x) => x.seq + x.idx + x.w > 0)
        .sort((a, b) => b.read + b.idx - (a.read + a.idx));
      for (const x of tables) {
        const cells = [
          x.seq.toFixed(1).padStart(11),
          x.read.toFixed(0).padStart(16),
          x.idx.toFixed(1).padStart(13),
        ];
        console.log(`    ${x.t.padEnd(28)}${cells.join('')}${x.w.toFixed(1).padStart(14)}`);
      }
    }
    const cpu = cpuByService(loadCpu);
    const writesTo = new Map(seqWrites);
    return {
      addedP50: percentile(addedPerTurn, 50),
      addedP99: percentile(addedPerTurn, 99),
      loadedP50: percentile(
        loaded.map((s) => s.latencyMs),
        50,
      ),
      turnsPerSecond,
      serviceCpu: cpu.gateway + cpu.orchestrator,
      portalCpu,
      cpu,
      firstTextP50: percentile(firstTextAdded, 50),
      writes: seqWrites.reduce((t, [, n]) => t + n, 0),
      postgresWrites: {
        gateway: writesTo.get('gateway → postgres') ?? NaN,
        orchestrator: writesTo.get('turn-orchestrator → postgres') ?? NaN,
      },
      redisWrites: {
        gateway: writesTo.get('gateway → redis') ?? NaN,
        orchestrator: writesTo.get('turn-orchestrator → redis') ?? NaN,
      },
      redisCommands: seqCommands,
    };
  } finally {
    for (const c of conversations) c.close();
    await pg.end().catch(() => undefined);
    if (profileDir) {
      // A graceful exit writes the profiles.
      await portal.kill('gateway', 'SIGTERM');
      await portal.kill('turn-orchestrator', 'SIGTERM');
      for (const line of summariseProfiles(profileDir)) console.log(line);
      rmSync(profileDir, { recursive: true, force: true });
    }
    await portal.stop();
    rmSync(countDir, { recursive: true, force: true });
    proxy.server.closeAllConnections();
    proxy.server.close();
    await fake.close();
  }
}

/**
 * Each run's headline figures and per-turn counts, their median, and the targets they are held to;
 * with `floors` (one per run, run right after it), the floor's figures and the portal's over them.
 */
function printMedians(runs: Summary[], floors: FloorFigures[]): void {
  const W = 50;
  const rows: [string, (s: Summary) => number, string][] = [
    ['added per turn p50 (ms)', (s) => s.addedP50, `< ${TURN_TARGETS.addedP50Ms}`],
    ['added per turn p99 (ms)', (s) => s.addedP99, `< ${TURN_TARGETS.addedP99Ms}`],
    [`turns/s, ${CONCURRENCY} conversations`, (s) => s.turnsPerSecond, `≥ ${TURN_TARGETS.turnsPerSecond}`],
    ['CPU per turn under load, gw + orch + pg (ms)', (s) => s.portalCpu, `≤ ${TURN_TARGETS.cpuPerTurnMs}`],
    ['  gateway', (s) => s.cpu.gateway, ''],
    ['  turn-orchestrator', (s) => s.cpu.orchestrator, ''],
    ['  postgres (bench db backends)', (s) => s.cpu.postgres, ''],
    ['first text added, p50 (ms)', (s) => s.firstTextP50, `< ${TURN_TARGETS.firstTextMs}`],
    ['writes per turn (seq), gw + orch', (s) => s.writes, ''],
    ['  gateway → postgres (round trips)', (s) => s.postgresWrites.gateway, ''],
    ['  turn-orchestrator → postgres (round trips)', (s) => s.postgresWrites.orchestrator, ''],
    ['  gateway → redis', (s) => s.redisWrites.gateway, ''],
    ['  turn-orchestrator → redis', (s) => s.redisWrites.orchestrator, ''],
    ['Redis commands per turn (seq, whole server)', (s) => s.redisCommands, ''],
  ];
  const runCols = runs.map((_, i) => `run ${i + 1}`.padStart(8)).join('');
  console.log(`\nsummary of ${runs.length} run(s)\n${''.padEnd(W)}${runCols}${'median'.padStart(8)}  target`);
  for (const [label, pick, target] of rows) {
    const values = runs.map(pick);
    console.log(
      `${label.padEnd(W)}${values.map(cell).join('')}${cell(median(values))}${target && `  ${target}`}`,
    );
  }
  if (floors.length === runs.length) {
    const ratio = (value: number) => figure(value, 2).padStart(8);
    const beside: [string, (i: number) => number, (value: number) => string][] = [
      ['the floor, run after each: added p50 (ms)', (i) => floors[i].addedP50, cell],
      ['  turns/s', (i) => floors[i].turnsPerSecond, cell],
      ['  CPU per turn under load (ms)', (i) => floors[i].cpuPerTurn, cell],
      ['portal ÷ floor: added p50', (i) => runs[i].addedP50 / floors[i].addedP50, ratio],
      ['  CPU per turn under load', (i) => runs[i].portalCpu / floors[i].cpuPerTurn, ratio],
      ['    gateway', (i) => runs[i].cpu.gateway / floors[i].cpu.gateway, ratio],
      ['    turn-orchestrator', (i) => runs[i].cpu.orchestrator / floors[i].cpu.orchestrator, ratio],
      ['    postgres', (i) => runs[i].cpu.postgres / floors[i].cpu.postgres, ratio],
    ];
    for (const [label, pick, show] of beside) {
      const values = runs.map((_, i) => pick(i));
      console.log(`${label.padEnd(W)}${values.map(show).join('')}${show(median(values))}`);
    }
  }
  const of = (pick: (s: Summary) => number) => median(runs.map(pick));
  printVerdicts(
    {
      addedP50: of((s) => s.addedP50),
      addedP99: of((s) => s.addedP99),
      turnsPerSecond: of((s) => s.turnsPerSecond),
      cpuPerTurn: of((s) => s.portalCpu),
      firstTextP50: of((s) => s.firstTextP50),
    },
    ', on the medians',
  );
}

async function main(): Promise<void> {
  buildServices();
  if (!TRACING) {
    const runs: Summary[] = [];
    const floors: FloorFigures[] = [];
    for (let i = 1; i <= RUNS; i++) {
      if (RUNS > 1) console.log(`\n=== run ${i} of ${RUNS} ===`);
      runs.push(await bench(null));
      if (!FLOOR) continue;
      console.log(`\n=== the floor (bench:turn-floor), run ${i} of ${RUNS} ===`);
      floors.push(await runFloor());
    }
    printMedians(runs, floors);
    return;
  }
  console.log('\n=== tracing off ===');
  const off = await bench(null);
  const receiver = await startOtlpReceiver();
  try {
    console.log('\n=== tracing on: OTLP/HTTP protobuf to a receiver in this process ===');
    const on = await bench(receiver);
    const exports = receiver.contentTypes.filter((t) => t.includes('protobuf')).length;
    console.log(`\ntracing off vs on (${exports} OTLP exports received while on):`);
    const W = 44;
    console.log(`${''.padEnd(W)}${'off'.padStart(8)}${'on'.padStart(8)}${'on−off'.padStart(8)}`);
    const line = (label: string, a: number, b: number) =>
      console.log(`${label.padEnd(W)}${cell(a)}${cell(b)}${cell(b - a)}`);
    line('added per turn p50 (ms)', off.addedP50, on.addedP50);
    line('added per turn p99 (ms)', off.addedP99, on.addedP99);
    line('latency under load p50 (ms)', off.loadedP50, on.loadedP50);
    line('throughput (turns/s)', off.turnsPerSecond, on.turnsPerSecond);
    line('gateway + orchestrator CPU per turn (ms)', off.serviceCpu, on.serviceCpu);
  } finally {
    await receiver.close();
  }
}

if (require.main === module) runMain(main);
