import { fork, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Resident memory of a process in bytes (Linux /proc), or NaN. */
export function rssBytes(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * The established TCP connections a process holds to `port` (Linux /proc): its socket inodes
 * matched against the connection tables. Counted from the process's side, so other clients of a
 * shared server do not blur the figure.
 */
export function connectionsTo(pid: number | undefined, port: number): number {
  if (!pid) return NaN;
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // closed while listed
    }
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    let rows: string[] = [];
    try {
      rows = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1);
    } catch {
      continue;
    }
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      // cols: sl, local, remote, state (01 = established), …, inode at 9
      if (cols[2].endsWith(`:${hexPort}`) && cols[3] === '01' && inodes.has(cols[9])) count++;
    }
  }
  return count;
}

/**
 * Starts the bench file `file` again as `role` (a server of its own) and resolves with the process
 * and the port it sends once it is ready.
 */
export function startChild(
  file: string,
  role: string,
  childEnv: Record<string, string> = {},
): Promise<{ child: ChildProcess; port: number }> {
  // Under tsx's loader like this process (it only compiles at load time; the run is plain Node).
  const child = fork(file, [role], { env: { ...process.env, ...childEnv }, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve({ child, port: m.port }));
    child.once('exit', (code) => reject(new Error(`${role} exited (${code}) before it was ready`)));
  });
}
