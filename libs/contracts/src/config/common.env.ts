import { z } from 'zod';
import type { Env } from '@portal/domain';
import { envVar, parseEnv } from './env.schema';

/** How long a statement waits for a Postgres connection, new or from a full pool, before it fails. */
export const DATABASE_POOL_WAIT_MS = 10_000;

/** Where Postgres and Redis are, and what of Redis is the portal's. */
export const storesEnv = {
  DATABASE_URL: envVar.url('Postgres, the truth', 'postgres://postgres@127.0.0.1:5432/portal', [
    'postgres:',
    'postgresql:',
  ]),
  DATABASE_POOL_SIZE: envVar.int(
    `Postgres connections each process may hold open; a statement waits up to ${DATABASE_POOL_WAIT_MS / 1000} s for a free one beyond that (why 10: docs/benchmarks.md)`,
    10,
    { min: 1, max: 100 },
  ),
  REDIS_URL: envVar.url('Redis: queues, events, sessions', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
  REDIS_CLUSTER_NODES: envVar.hostPorts(
    'Seed nodes of a Redis Cluster as `host:port`, comma separated: turns cluster mode on and REDIS_URL is then not read; unset: one server at REDIS_URL',
  ),
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

/**
 * OpenTelemetry's standard variables, as the services read them to decide whether and how to trace
 * (each app's tracing.ts); the OTLP exporter reads the endpoint, headers and timeouts itself.
 */
export const tracingEnv = {
  OTEL_SDK_DISABLED: envVar.string('`true` turns tracing off whatever else is set', 'false'),
  OTEL_TRACES_EXPORTER: envVar.string('`otlp` or `none` (tracing off)', 'otlp'),
  OTEL_EXPORTER_OTLP_ENDPOINT: envVar.optional(
    'OTLP/HTTP collector base URL (`/v1/traces` is appended); unset, with no traces endpoint: tracing off',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: envVar.optional(
    'OTLP/HTTP traces URL, used as is; wins over OTEL_EXPORTER_OTLP_ENDPOINT',
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: envVar.string('`http/protobuf` or `http/json`', 'http/protobuf'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: envVar.optional(
    '`http/protobuf` or `http/json` for traces; wins over OTEL_EXPORTER_OTLP_PROTOCOL',
  ),
  OTEL_SERVICE_NAME: envVar.optional("The service's name on its spans; unset: the app's name (`gateway`, …)"),
};

/** The OTEL_* variables as text, unset ones as their defaults. */
export function readTracingEnv(env: Env): z.output<z.ZodObject<typeof tracingEnv>> {
  return parseEnv(z.object(tracingEnv), env);
}

/** What every service reads. */
export const commonEnv = {
  ...storesEnv,
  ...tracingEnv,
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

/** One Redis server (REDIS_URL), or the seed nodes of a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisTarget = { url: string } | { clusterNodes: { host: string; port: number }[] };

/** What every service reads: where Postgres and Redis are and the Redis key prefix. */
export interface CommonConfig {
  databaseUrl: string;
  /** Connections of the process's Postgres pool (DATABASE_POOL_SIZE). */
  databasePoolSize: number;
  redis: RedisTarget;
  prefix: string;
  /** How long a conversation's events stay replayable for `Last-Event-ID` (EVENT_RETENTION). */
  eventRetentionMs: number;
}

const storesSchema = z.object(storesEnv);

/** The stores' part of a parsed environment as every app's config holds it. */
export function commonConfigOf(vars: z.output<typeof storesSchema>): CommonConfig {
  return {
    databaseUrl: vars.DATABASE_URL,
    databasePoolSize: vars.DATABASE_POOL_SIZE,
    redis: vars.REDIS_CLUSTER_NODES.length
      ? { clusterNodes: vars.REDIS_CLUSTER_NODES }
      : { url: vars.REDIS_URL },
    prefix: vars.PORTAL_PREFIX,
    eventRetentionMs: vars.EVENT_RETENTION,
  };
}

export function readCommonConfig(env: Env): CommonConfig {
  return commonConfigOf(parseEnv(storesSchema, env));
}

/** REDIS_URL: the one Redis server. */
export function readRedisUrl(env: Env): string {
  return parseEnv(z.object({ REDIS_URL: storesEnv.REDIS_URL }), env).REDIS_URL;
}

/** The environment variables that name `target`, as the stores' schema reads them. */
export function redisTargetEnv(target: RedisTarget): Record<string, string> {
  if ('url' in target) return { REDIS_URL: target.url };
  return { REDIS_CLUSTER_NODES: target.clusterNodes.map((n) => `${n.host}:${n.port}`).join(',') };
}
