import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from 'pg';
import { readRedisUrl } from '@portal/contracts';

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process in ms, all its threads (Linux /proc), or null. */
export function cpuMs(pid: number | undefined): number | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return null;
  }
}

/** User + system CPU time of this process in ms, all its threads (sharp's and libuv's included). */
export function ownCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** The sum of cpuMs over `pids`, or null when none could be read. */
export function cpuMsOfAll(pids: readonly number[]): number | null {
  return pids.reduce<number | null>((total, pid) => {
    const ms = cpuMs(pid);
    return ms === null ? total : (total ?? 0) + ms;
  }, null);
}

/** The ids of the processes whose command line starts with `command` (Linux /proc; else none). */
export function pidsOf(command: string): number[] {
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  return entries.map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(command);
    } catch {
      return false;
    }
  });
}

let redisPidCache: number | null | undefined;
/** The Redis server's process id, from INFO (the server the portal uses). */
export async function redisServerPid(): Promise<number | null> {
  if (redisPidCache !== undefined) return redisPidCache;
  const IORedis = (await import('ioredis')).default;
  const redis = new IORedis(readRedisUrl(process.env));
  try {
    const info = await redis.info('server');
    redisPidCache = Number(/process_id:(\d+)/.exec(info)?.[1]) || null;
  } finally {
    redis.disconnect();
  }
  return redisPidCache;
}

/** Commands the Redis server has run since it started (INFO stats; the whole server). */
export async function redisCommandsSoFar(): Promise<number> {
  const IORedis = (await import('ioredis')).default;
  const redis = new IORedis(readRedisUrl(process.env));
  try {
    // Less this INFO itself, so a reading costs nothing between two.
    return Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1]) - 1;
  } finally {
    redis.disconnect();
  }
}

/** What bench:turns and bench:turn-floor read before and after a stretch of turns. */
export interface TurnAccounts {
  /** CPU ms so far per process group. */
  cpu: Record<string, number | null>;
  /** Commands the Redis server ran (its own count, whole server). */
  redisCommands: number;
}

/**
 * CPU time so far of a turn's processes: the gateway, the orchestrator, the Postgres backends
 * serving `pg`'s database (`pg`'s own left out), Redis (shared with anything else using it), and
 * this process (the client, the fake model and its proxy); and Redis's command count.
 */
export async function turnAccounts(
  pg: Client,
  pids: { gateway: number | undefined; orchestrator: number | undefined },
): Promise<TurnAccounts> {
  const backends = await pg.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
  );
  const redisPid = await redisServerPid();
  return {
    redisCommands: await redisCommandsSoFar(),
    cpu: {
      gateway: cpuMs(pids.gateway),
      'turn-orchestrator': cpuMs(pids.orchestrator),
      'postgres (bench db backends)': cpuMsOfAll(backends.rows.map((r) => r.pid)),
      'redis (whole server)': cpuMs(redisPid ?? undefined),
      'bench client + fake model': ownCpuMs(),
    },
  };
}
