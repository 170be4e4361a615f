import { hostname } from 'node:os';
import { z } from 'zod';
import {
  commonConfigOf,
  commonEnv,
  envVar,
  parseEnv,
  toolsEnv,
  workerEnv,
  type CommonConfig,
  type Env,
} from '@portal/contracts';
import { readPortalFloor } from '@portal/application';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';

const ms = (description: string, fallback: number, min = 0) => envVar.int(description, fallback, { min });

/** The turn-orchestrator's environment: every variable it reads, once, in main. */
export const turnOrchestratorEnv = z.object({
  ...commonEnv,
  ...toolsEnv,
  ...workerEnv(3101),
  TOOL_TIMEOUT_MS: ms('How long one HTTP tool call may take', 15_000, 1),
  TOOL_MAX_RESPONSE_BYTES: ms("Bytes of an HTTP tool's answer read at most", 1_000_000, 1),
  MCP_LIST_TIMEOUT_MS: ms("How long listing an MCP server's tools may take when a turn starts", 5_000, 1),
  MCP_LIST_CACHE_MS: ms("How long a server's tool list is reused before it is listed again", 60_000),
  MODEL_RETRIES: envVar.int('Retries of a model call after a 429, a 5xx, a broken stream or a timeout', 3, {
    max: 20,
  }),
  MODEL_RETRY_BASE_MS: ms('First wait before a retry; it doubles each time', 500),
  MODEL_RETRY_MAX_MS: ms('The longest wait between two attempts, retry-after included', 30_000),
  MODEL_TIMEOUT_MS: ms("Time to a model's response headers", 120_000, 1),
  MODEL_IDLE_TIMEOUT_MS: ms('The longest silence inside a model stream', 120_000, 1),
  TURN_LEASE_MS: ms("A running turn's lease; renewed every third of it", 6_000, 300),
  RECONCILE_INTERVAL_MS: ms('How often stalled turns are looked for; 0 turns the reconciler off', 3_000),
});

export interface TurnOrchestratorConfig extends CommonConfig {
  healthPort: number;
  /** PORTAL_MODELS_FILE, loaded and validated at boot. */
  catalogue: ModelEntry[];
  /** Layer 1's first part, from PORTAL_BOOTSTRAP_FILE. */
  portalFloor: string;
  limits: Limits;
  /** PORTAL_TOOL_URL_ALLOW: an HTTP tool is called only when its URL starts with one of these. */
  toolUrlAllow: string[];
  toolTimeoutMs: number;
  toolMaxResponseBytes: number;
  /** How long listing an MCP server's tools may take when a turn starts. */
  mcpListTimeoutMs: number;
  /** How long a server's tool list is reused before it is listed again. */
  mcpListCacheMs: number;
  /** Retries of a model call after a 429, a 5xx, a broken stream or a timeout. */
  modelRetries: number;
  modelRetryBaseMs: number;
  /** The longest wait between two attempts, retry-after included. */
  modelRetryMaxMs: number;
  /** Time to the response headers, and the longest silence inside a stream. */
  modelTimeoutMs: number;
  modelIdleTimeoutMs: number;
  /** A running turn's lease; renewed every third of it. */
  leaseMs: number;
  /** 0 turns the reconciler off. */
  reconcileIntervalMs: number;
  /** Names this process in lease owners and logs. */
  workerId: string;
  logLevel: string;
  shutdownDeadlineMs: number;
  /** BLOB_STORE as set: BlobStoreModule opens the store it names. */
  blobStore: string;
  /** The environment read, for the key variables the catalogue names (`apiKeyEnv`). */
  env: Env;
}

export function readConfig(env: Env): TurnOrchestratorConfig {
  const vars = parseEnv(turnOrchestratorEnv, env);
  return {
    ...commonConfigOf(vars),
    healthPort: vars.HEALTH_PORT,
    catalogue: loadCatalogue(env),
    portalFloor: readPortalFloor(vars.PORTAL_BOOTSTRAP_FILE ?? null),
    limits: limitsFromEnv(env),
    toolUrlAllow: vars.PORTAL_TOOL_URL_ALLOW,
    toolTimeoutMs: vars.TOOL_TIMEOUT_MS,
    toolMaxResponseBytes: vars.TOOL_MAX_RESPONSE_BYTES,
    mcpListTimeoutMs: vars.MCP_LIST_TIMEOUT_MS,
    mcpListCacheMs: vars.MCP_LIST_CACHE_MS,
    modelRetries: vars.MODEL_RETRIES,
    modelRetryBaseMs: vars.MODEL_RETRY_BASE_MS,
    modelRetryMaxMs: vars.MODEL_RETRY_MAX_MS,
    modelTimeoutMs: vars.MODEL_TIMEOUT_MS,
    modelIdleTimeoutMs: vars.MODEL_IDLE_TIMEOUT_MS,
    leaseMs: vars.TURN_LEASE_MS,
    reconcileIntervalMs: vars.RECONCILE_INTERVAL_MS,
    workerId: `${hostname()}:${process.pid}`,
    env,
    logLevel: vars.LOG_LEVEL,
    shutdownDeadlineMs: vars.SHUTDOWN_DEADLINE_MS,
    blobStore: vars.BLOB_STORE,
  };
}
