import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { migrate } from './migrate';

/** `npm start`: migrates, then runs every service as its own process, each line prefixed by its name. */
const APPS = ['gateway', 'turn-orchestrator', 'attachment-ingest', 'compaction-worker'];

async function main() {
  await migrate();
  const children: ChildProcess[] = APPS.map((app) => {
    // `<APP>_HEALTH_PORT` (e.g. TURN_ORCHESTRATOR_HEALTH_PORT) moves one worker's health port.
    const healthPort = process.env[`${app.toUpperCase().replace(/-/g, '_')}_HEALTH_PORT`];
    const env = healthPort ? { ...process.env, HEALTH_PORT: healthPort } : process.env;
    // The image's launcher, so each service runs with the same Node flags here as there.
    const child = spawn('/bin/sh', [path.join(__dirname, '..', '..', 'docker', 'entrypoint.sh'), app], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = (line: string) => `[${app}] ${line}`;
    for (const stream of [child.stdout, child.stderr]) {
      let rest = '';
      stream?.on('data', (chunk: Buffer) => {
        const lines = (rest + chunk.toString()).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines)
          (stream === child.stderr ? process.stderr : process.stdout).write(prefix(line) + '\n');
      });
    }
    child.on('exit', (code, signal) => {
      console.log(prefix(`exited (${signal ?? code})`));
      if (!stopping) shutdown(code ?? 1);
    });
    return child;
  });

  let stopping = false;
  function shutdown(code: number) {
    stopping = true;
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    Promise.all(
      children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)),
    ).then(() => process.exit(code));
  }
  process.on('SIGINT', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
}

main().catch((err) => {
  console.error(`start failed: ${(err as Error).message}`);
  process.exit(1);
});
