import { ConfigError, type Env } from '@portal/domain';

export { ConfigError, type Env };

export function envString(env: Env, name: string, fallback: string): string {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  return value;
}

export function envInt(
  env: Env,
  name: string,
  fallback: number,
  range: { min?: number; max?: number } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (range.min !== undefined && value < range.min)
    throw new ConfigError(name, `must be at least ${range.min}`);
  if (range.max !== undefined && value > range.max)
    throw new ConfigError(name, `must be at most ${range.max}`);
  return value;
}

export function envUrl(env: Env, name: string, fallback: string, protocols: string[]): string {
  const value = envString(env, name, fallback);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${value}"`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${url.protocol}"`);
  }
  return value;
}

/** A duration as `250ms`, `90s`, `30m`, `24h`, `7d`, or a plain number of milliseconds. */
export function envDuration(
  env: Env,
  name: string,
  fallbackMs: number,
  range: { minMs?: number } = {},
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallbackMs;
  const match = /^(\d+)(ms|s|m|h|d)?$/.exec(raw.trim());
  if (!match) throw new ConfigError(name, `must be a duration like 24h, 30m or 90s, got "${raw}"`);
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 'ms'] as number;
  const value = Number(match[1]) * unitMs;
  if (range.minMs !== undefined && value < range.minMs)
    throw new ConfigError(name, `must be at least ${range.minMs} ms`);
  return value;
}

/** What every service reads: where Postgres and Redis are and the Redis key prefix. */
export interface CommonConfig {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  /** How long a conversation's events stay replayable for `Last-Event-ID` (EVENT_RETENTION). */
  eventRetentionMs: number;
}

export function readCommonConfig(env: Env): CommonConfig {
  const prefix = envString(env, 'PORTAL_PREFIX', 'portal');
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(prefix)) {
    throw new ConfigError('PORTAL_PREFIX', 'must be 1-32 letters, digits, "_" or "-"');
  }
  return {
    databaseUrl: envUrl(env, 'DATABASE_URL', 'postgres://postgres@127.0.0.1:5432/portal', [
      'postgres:',
      'postgresql:',
    ]),
    redisUrl: envUrl(env, 'REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    prefix,
    eventRetentionMs: envDuration(env, 'EVENT_RETENTION', 24 * 3_600_000, { minMs: 60_000 }),
  };
}
