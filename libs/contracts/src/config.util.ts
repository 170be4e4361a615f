/** Reading the environment once at boot: a bad value stops the process with a message naming it. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

export type Env = Record<string, string | undefined>;

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

/** What every service reads: where Postgres and Redis are and the Redis key prefix. */
export interface CommonConfig {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
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
  };
}
