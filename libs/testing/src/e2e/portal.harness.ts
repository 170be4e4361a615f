import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readRedisUrl, redisTargetEnv, type RedisTarget } from '@portal/contracts';
import { createTestDatabase, type TestDatabase } from '../database.util';
import { APPS, launchService, type App } from '../deploy/deploy.util';
import { deleteRedisPrefix } from '../redis.util';

export const PORTAL_APPS = APPS;
export type PortalApp = App;

export interface PortalOptions {
  /** The model catalogue (API.md shape, `models: [...]`), written to PORTAL_MODELS_FILE. */
  models?: unknown;
  /** The bootstrap file (API.md shape), written to PORTAL_BOOTSTRAP_FILE. */
  bootstrap?: unknown;
  apps?: readonly PortalApp[];
  env?: Record<string, string>;
  /** A Postgres server of the suite's own (its fresh database is created there); default DATABASE_URL's. */
  databaseURL?: string;
  /** A Redis server or cluster of the suite's own; default REDIS_URL (or the local one). */
  redis?: RedisTarget;
}

export interface RunningPortal {
  baseURL: string;
  database: TestDatabase;
  prefix: string;
  env: Record<string, string>;
  /** Everything each service printed, for assertions and for debugging a failing test. */
  logs: Record<PortalApp, string[]>;
  healthURL(app: PortalApp): string;
  /** The service's process id while it runs (e.g. to read /proc/<pid>/status); undefined once it exited. */
  pid(app: PortalApp): number | undefined;
  start(app: PortalApp): Promise<void>;
  /** Sends a signal to a service and waits for it to exit. */
  kill(app: PortalApp, signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

const SHARED_REDIS: RedisTarget = { url: readRedisUrl(process.env) };

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitForReady(
  url: string,
  child: ChildProcess,
  logs: string[],
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode}):\n${logs.join('')}`);
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`service not ready at ${url} within ${timeoutMs} ms:\n${logs.join('')}`);
}

/**
 * Runs the built services (dist/, built by the Jest global setup) as real processes on a fresh
 * database and a Redis prefix of their own, like `npm start` does.
 */
export async function startPortal(options: PortalOptions = {}): Promise<RunningPortal> {
  const redis = options.redis ?? SHARED_REDIS;
  const database = await createTestDatabase(options.databaseURL);
  await database.dataSource.destroy();
  const prefix = `e2e${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(path.join(tmpdir(), 'portal-e2e-'));
  const ports: Record<PortalApp, number> = {
    gateway: await freePort(),
    'turn-orchestrator': await freePort(),
    'attachment-ingest': await freePort(),
    'compaction-worker': await freePort(),
  };
  const env: Record<string, string> = {
    DATABASE_URL: database.url,
    // The services' REDIS_CLUSTER_NODES would win over REDIS_URL: only the suite's own is set.
    REDIS_URL: '',
    REDIS_CLUSTER_NODES: '',
    ...redisTargetEnv(redis),
    PORTAL_PREFIX: prefix,
    PORT: String(ports.gateway),
    HOST: '127.0.0.1',
    // Functional suites poll and stream far above a person's pace: the per-key rate limit
    // (RATE_LIMIT_PER_MINUTE, default 600) stays on but out of their way; its own suite lowers it.
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...options.env,
  };
  if (options.models) {
    env.PORTAL_MODELS_FILE = path.join(dir, 'models.json');
    writeFileSync(env.PORTAL_MODELS_FILE, JSON.stringify(options.models));
  }
  if (options.bootstrap) {
    env.PORTAL_BOOTSTRAP_FILE = path.join(dir, 'bootstrap.json');
    writeFileSync(env.PORTAL_BOOTSTRAP_FILE, JSON.stringify(options.bootstrap));
  }

  const children = new Map<PortalApp, ChildProcess>();
  const logs = Object.fromEntries(PORTAL_APPS.map((app) => [app, [] as string[]])) as Record<
    PortalApp,
    string[]
  >;
  const healthURL = (app: PortalApp) => `http://127.0.0.1:${ports[app]}/health/ready`;

  async function start(app: PortalApp): Promise<void> {
    const child = launchService(app, {
      env: { ...process.env, ...env, HEALTH_PORT: String(ports[app]), NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => logs[app].push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => logs[app].push(chunk.toString()));
    children.set(app, child);
    await waitForReady(healthURL(app), child, logs[app]);
  }

  async function kill(app: PortalApp, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = children.get(app);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }

  async function stop(): Promise<void> {
    await Promise.all(PORTAL_APPS.map((app) => kill(app, 'SIGKILL')));
    await deleteRedisPrefix(redis, prefix);
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }

  try {
    for (const app of options.apps ?? PORTAL_APPS) await start(app);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    baseURL: `http://127.0.0.1:${ports.gateway}`,
    database,
    prefix,
    env,
    logs,
    healthURL,
    pid: (app) => {
      const child = children.get(app);
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    start,
    kill,
    stop,
  };
}
