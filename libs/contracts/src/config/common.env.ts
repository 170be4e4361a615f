import { z } from 'zod';
import type { Env } from '@portal/domain';
import { envVar, parseEnv } from './env.schema';

/** Where Postgres and Redis are, and what of Redis is the portal's. */
export const storesEnv = {
  DATABASE_URL: envVar.url('Postgres, the truth', 'postgres://postgres@127.0.0.1:5432/portal', [
    'postgres:',
    'postgresql:',
  ]),
  REDIS_URL: envVar.url('Redis: queues, events, sessions', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
  PORTAL_PREFIX: envVar.matching(
    'Redis key prefix, so several portals share one Redis',
    'portal',
    /^[A-Za-z0-9_-]{1,32}$/,
    'must be 1-32 letters, digits, "_" or "-"',
  ),
  EVENT_RETENTION: envVar.duration(
    "How long a conversation's events stay replayable for Last-Event-ID",
    '24h',
    { minMs: 60_000 },
  ),
};

/** What every service reads. */
export const commonEnv = {
  ...storesEnv,
  LOG_LEVEL: envVar.oneOf(
    'Lowest level logged (one JSON line each, on stdout)',
    ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'],
    'info',
  ),
  BLOB_STORE: envVar.string(
    'Where attachment bytes live: `postgres` (a table) or `file:/absolute/path` (one volume shared by the gateway, attachment-ingest and turn-orchestrator)',
    'postgres',
  ),
  PORTAL_MODELS_FILE: envVar.optional(
    'The model catalogue (JSON or YAML); unset: the built-in local model, plus OpenAI models when OPENAI_API_KEY is set',
  ),
  OPENAI_API_KEY: envVar.optional('Without PORTAL_MODELS_FILE: adds a small set of OpenAI models'),
};

/** What an agent's tools are checked against: the gateway refuses them, the orchestrator never calls them. */
export const toolsEnv = {
  PORTAL_TOOL_URL_ALLOW: envVar.urlPrefixes(
    "Comma-separated http(s) URL prefixes an agent's HTTP tools and MCP servers must start with; unset allows none",
  ),
  PORTAL_BOOTSTRAP_FILE: envVar.optional(
    'Orgs, users with API keys, agents and skills, applied at start (JSON or YAML); its `portalFloor` opens every prompt. Unset: a demo org',
  ),
};

/** What every queue worker reads. */
export const workerEnv = (healthPort: number) => ({
  HEALTH_PORT: envVar.int('Port of GET /health/live, /health/ready and /metrics', healthPort, {
    min: 1,
    max: 65535,
  }),
  SHUTDOWN_DEADLINE_MS: envVar.int(
    'How long SIGTERM waits for running jobs to finish or be handed back before the process exits',
    25_000,
    { min: 1 },
  ),
});

/** What every service reads: where Postgres and Redis are and the Redis key prefix. */
export interface CommonConfig {
  databaseUrl: string;
  redisUrl: string;
  prefix: string;
  /** How long a conversation's events stay replayable for `Last-Event-ID` (EVENT_RETENTION). */
  eventRetentionMs: number;
}

const storesSchema = z.object(storesEnv);

/** The stores' part of a parsed environment as every app's config holds it. */
export function commonConfigOf(vars: z.output<typeof storesSchema>): CommonConfig {
  return {
    databaseUrl: vars.DATABASE_URL,
    redisUrl: vars.REDIS_URL,
    prefix: vars.PORTAL_PREFIX,
    eventRetentionMs: vars.EVENT_RETENTION,
  };
}

export function readCommonConfig(env: Env): CommonConfig {
  return commonConfigOf(parseEnv(storesSchema, env));
}
