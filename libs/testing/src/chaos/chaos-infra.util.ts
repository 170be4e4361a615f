import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../e2e/portal.harness';

/**
 * A Redis or Postgres server of the chaos suite's own, which it may kill and start again without
 * touching the machine's shared ones (other suites and people use those meanwhile).
 */
export interface OwnServer {
  url: string;
  port: number;
  /** Stops the server (Redis: SIGKILL, its data is gone; Postgres: fast shutdown), then starts it again. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
  /** What the server printed, for a failing run. */
  logs: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves once a TCP connection to 127.0.0.1:port succeeds (and `probe` passes, when given). */
async function waitForPort(
  port: number,
  child: ChildProcess,
  logs: string[],
  probe: () => Promise<boolean> = async () => true,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited (${child.exitCode}):\n${logs.join('')}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open && (await probe())) return;
    await sleep(50);
  }
  throw new Error(`server on port ${port} not ready within ${timeoutMs} ms:\n${logs.join('')}`);
}

/** Servers still running when this process exits (a run cut short) are killed with it. */
const leftovers = new Set<ChildProcess>();
let watchingExit = false;

function capture(child: ChildProcess, logs: string[]): void {
  if (!watchingExit) process.once('exit', () => leftovers.forEach((c) => c.kill('SIGKILL')));
  watchingExit = true;
  leftovers.add(child);
  child.once('exit', () => leftovers.delete(child));
  child.stdout?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
}

async function killAndWait(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

/** `redis-server` on a free port with no persistence: a restart loses every key. */
export async function startOwnRedis(): Promise<OwnServer> {
  const port = await freePort();
  const logs: string[] = [];
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    capture(child, logs);
    await waitForPort(port, child, logs);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    logs,
    async restart(downMs = 500) {
      await killAndWait(child, 'SIGKILL');
      await sleep(downMs);
      await start();
    },
    stop: () => killAndWait(child, 'SIGKILL'),
  };
}

/** A Redis Cluster of the suite's own: its masters, and the restart of one of them. */
export interface OwnRedisCluster {
  /** The seed nodes, as REDIS_CLUSTER_NODES names them. */
  nodes: { host: string; port: number }[];
  /** SIGKILLs the first master (its keys are gone) and starts it again with its slots. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
  logs: string[];
}

/**
 * A Redis Cluster of `masters` nodes and no replicas, each `redis-server` in a temp dir of its
 * own with no persistence: `redis-cli --cluster create` shares the 16384 slots among them. A
 * restarted node keeps its cluster config (nodes.conf) and so its slots, but none of its keys.
 */
export async function startOwnRedisCluster(masters = 3): Promise<OwnRedisCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portal-redis-cluster-'));
  const logs: string[] = [];
  const nodes: { port: number; busPort: number; dir: string; child?: ChildProcess }[] = [];
  for (let i = 0; i < masters; i++) {
    const nodeDir = path.join(dir, String(i));
    mkdirSync(nodeDir);
    nodes.push({ port: await freePort(), busPort: await freePort(), dir: nodeDir });
  }
  const start = async (node: (typeof nodes)[number]) => {
    const args = [
      ...['--port', String(node.port), '--cluster-port', String(node.busPort), '--bind', '127.0.0.1'],
      ...[
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        'nodes.conf',
        '--cluster-node-timeout',
        '5000',
      ],
      ...['--dir', node.dir, '--save', '', '--appendonly', 'no'],
    ];
    node.child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    capture(node.child, logs);
    await waitForPort(node.port, node.child, logs);
  };
  const clusterOk = async () => {
    for (const node of nodes) {
      const info = spawnSync('redis-cli', ['-p', String(node.port), 'cluster', 'info'], { encoding: 'utf8' });
      if (!info.stdout.includes('cluster_state:ok')) return false;
    }
    return true;
  };
  const untilOk = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await clusterOk())) {
      if (Date.now() > deadline)
        throw new Error(`Redis Cluster not ok within ${timeoutMs} ms:\n${logs.join('')}`);
      await sleep(100);
    }
  };
  const stop = async () => {
    await Promise.all(nodes.map((node) => killAndWait(node.child, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };
  // The ports were free when picked, but anything (another test, a connection's source port) may
  // take one before redis-server binds it: a node that finds its port taken gets new ones.
  const startFresh = async (node: (typeof nodes)[number]) => {
    for (let attempt = 1; ; attempt++) {
      const logged = logs.length;
      try {
        return await start(node);
      } catch (err) {
        const taken = logs.slice(logged).some((line) => line.includes('Address already in use'));
        if (!taken || attempt === 5) throw err;
        rmSync(node.dir, { recursive: true, force: true });
        mkdirSync(node.dir);
        node.port = await freePort();
        node.busPort = await freePort();
      }
    }
  };
  try {
    for (const node of nodes) await startFresh(node);
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes'],
      { encoding: 'utf8' },
    );
    if (create.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await untilOk();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nodes: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    logs,
    async restart(downMs = 500) {
      await killAndWait(nodes[0].child, 'SIGKILL');
      await sleep(downMs);
      await start(nodes[0]);
      await untilOk();
    },
    stop,
  };
}

/** The newest Postgres server binaries of the Debian package. */
function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) throw new Error(`no Postgres server binaries under ${root}`);
  return path.join(root, versions[0], 'bin');
}

/** initdb and postgres refuse to run as root: as root they run as the `postgres` user. */
function postgresUser(): { uid: number; gid: number } | Record<string, never> {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) =>
    Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const user = { uid: id('-u'), gid: id('-g') };
  if (!user.uid) throw new Error('running as root, and there is no `postgres` user to run Postgres as');
  return user;
}

/**
 * A throwaway Postgres cluster (initdb into a temp dir, trust auth, socket in the temp dir) on a
 * free port. `stop` removes the directory.
 */
export async function startOwnPostgres(): Promise<OwnServer> {
  const bin = postgresBin();
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'portal-chaos-pg-'));
  const data = path.join(dir, 'data');
  const logs: string[] = [];
  const user = postgresUser();
  if ('uid' in user) chownSync(dir, user.uid, user.gid);
  chmodSync(dir, 0o700);
  const init = spawnSync(
    path.join(bin, 'initdb'),
    ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'],
    { encoding: 'utf8', cwd: dir, ...user },
  );
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.status}): ${init.stderr || init.stdout}`);
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const ready = async () => {
    const { Client } = await import('pg');
    const client = new Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  let child: ChildProcess | undefined;
  const start = async () => {
    const args = [
      '-D',
      data,
      '-p',
      String(port),
      '-k',
      dir,
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      'max_connections=200',
    ];
    child = spawn(path.join(bin, 'postgres'), args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, ...user });
    capture(child, logs);
    await waitForPort(port, child, logs, ready);
  };
  /** Fast shutdown: every session is ended, the server exits. */
  const shutdown = () => killAndWait(child, 'SIGINT');
  try {
    await start();
  } catch (err) {
    await killAndWait(child, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    port,
    logs,
    async restart(downMs = 500) {
      await shutdown();
      await sleep(downMs);
      await start();
    },
    async stop() {
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
