import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { readRedisUrl } from '@portal/contracts';
import { METRIC } from '@portal/observability';
import { createTestDatabase, type TestDatabase } from '../database.util';
import { launchService, type App } from '../deploy/deploy.util';
import { deleteRedisPrefix } from '../redis.util';

/**
 * The built workers (dist/, built by the Jest global setup) as real processes started by
 * docker/entrypoint.sh: their health port serves /metrics, they log JSON, and SIGTERM while idle
 * ends them with code 0 well within the deadline. (SIGTERM mid-turn is the end-to-end suite's.)
 */
const REDIS_URL = readRedisUrl(process.env);
const DEADLINE_MS = 8000;
const WORKERS = [
  ['turn-orchestrator', 'turns'],
  ['attachment-ingest', 'attachments'],
  ['compaction-worker', 'compactions'],
] as const;

let db: TestDatabase;
const prefix = `boot-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await deleteRedisPrefix(REDIS_URL, prefix);
  await db?.drop();
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function startWorker(app: App, port: number): Promise<{ child: ChildProcess; output: string[] }> {
  // The launcher must hand the process over to node (`exec`) for SIGTERM to reach it.
  const child = launchService(app, {
    env: {
      PATH: process.env['PATH'],
      DATABASE_URL: db.url,
      REDIS_URL,
      PORTAL_PREFIX: prefix,
      HEALTH_PORT: String(port),
      SHUTDOWN_DEADLINE_MS: String(DEADLINE_MS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`${app} exited (${child.exitCode}):\n${output.join('')}`);
    const ok = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, output };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${app} not ready:\n${output.join('')}`);
}

describe.each(WORKERS)('the %s process', (app, queue) => {
  it('serves /metrics on its health port, logs JSON, and exits 0 on SIGTERM while idle', async () => {
    const port = await freePort();
    const { child, output } = await startWorker(app, port);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      for (const name of Object.values(METRIC)) expect(text).toContain(`# TYPE ${name} `);
      expect(text).toContain(`portal_queue_jobs{queue="${queue}",state="waiting"} 0`);
      expect(text).toContain(`portal_${app.replace(/-/g, '_')}_process_cpu_user_seconds_total`);

      const started = Date.now();
      const exited = new Promise<[number | null, string | null]>((resolve) =>
        child.once('exit', (code, signal) => resolve([code, signal])),
      );
      child.kill('SIGTERM');
      expect(await exited).toEqual([0, null]);
      expect(Date.now() - started).toBeLessThan(DEADLINE_MS);

      const lines = output
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
      expect(lines.every((l) => l.name === app)).toBe(true);
      expect(lines.map((l) => l.msg)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^SIGTERM: no new jobs/), 'stopped']),
      );
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 30_000);
});
