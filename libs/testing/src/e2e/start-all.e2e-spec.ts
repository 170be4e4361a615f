import { spawn } from 'node:child_process';
import path from 'node:path';
import { createServer } from 'node:net';
import { readRedisUrl } from '@portal/contracts';
import { dropDatabase } from '@portal/dal';
import { createTestDatabase } from '../database.util';
import { deleteRedisPrefix } from '../redis.util';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function ready(url: string, deadline: number): Promise<boolean> {
  while (Date.now() < deadline) {
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

/** Issue 2: `npm start` creates and migrates the database, then brings up four healthy processes. */
describe('npm start', () => {
  it('creates the database, migrates it and runs the gateway and the three workers', async () => {
    const probe = await createTestDatabase();
    await probe.drop(); // a name that certainly does not exist now: start-all must create it
    const [port, orchestrator, ingest, compaction] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const prefix = `start${port}`;
    const child = spawn(process.execPath, ['dist/tools/start-all.js'], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: probe.url,
        PORT: String(port),
        PORTAL_PREFIX: prefix,
        TURN_ORCHESTRATOR_HEALTH_PORT: String(orchestrator),
        ATTACHMENT_INGEST_HEALTH_PORT: String(ingest),
        COMPACTION_WORKER_HEALTH_PORT: String(compaction),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    child.stdout.on('data', (c: Buffer) => output.push(c.toString()));
    child.stderr.on('data', (c: Buffer) => output.push(c.toString()));
    try {
      const deadline = Date.now() + 60_000;
      const urls = [
        `http://127.0.0.1:${port}/health/ready`,
        `http://127.0.0.1:${orchestrator}/health/ready`,
        `http://127.0.0.1:${ingest}/health/ready`,
        `http://127.0.0.1:${compaction}/health/ready`,
      ];
      for (const url of urls)
        expect([url, await ready(url, deadline), output.join('')]).toEqual([url, true, expect.anything()]);
      expect(output.join('')).toMatch(/\[gateway\]/);
      expect(output.join('')).toMatch(/\[compaction-worker\]/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await dropDatabase(probe.url);
      await deleteRedisPrefix(readRedisUrl(process.env), prefix);
    }
  }, 90_000);
});
