import { hostname } from 'node:os';
import { ConfigError, envInt, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';
import { readPortalFloor } from '@portal/dal';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';

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
}

export function readConfig(env: Env): TurnOrchestratorConfig {
  return {
    ...readCommonConfig(env),
    healthPort: envInt(env, 'HEALTH_PORT', 3101, { min: 1, max: 65535 }),
    catalogue: loadCatalogue(env),
    portalFloor: readPortalFloor(env['PORTAL_BOOTSTRAP_FILE'] || null),
    limits: limitsFromEnv(env),
    toolUrlAllow: urlPrefixes(env, 'PORTAL_TOOL_URL_ALLOW'),
    toolTimeoutMs: envInt(env, 'TOOL_TIMEOUT_MS', 15_000, { min: 1 }),
    toolMaxResponseBytes: envInt(env, 'TOOL_MAX_RESPONSE_BYTES', 1_000_000, { min: 1 }),
    mcpListTimeoutMs: envInt(env, 'MCP_LIST_TIMEOUT_MS', 5_000, { min: 1 }),
    mcpListCacheMs: envInt(env, 'MCP_LIST_CACHE_MS', 60_000),
    modelRetries: envInt(env, 'MODEL_RETRIES', 3, { max: 20 }),
    modelRetryBaseMs: envInt(env, 'MODEL_RETRY_BASE_MS', 500),
    modelRetryMaxMs: envInt(env, 'MODEL_RETRY_MAX_MS', 30_000),
    modelTimeoutMs: envInt(env, 'MODEL_TIMEOUT_MS', 120_000, { min: 1 }),
    modelIdleTimeoutMs: envInt(env, 'MODEL_IDLE_TIMEOUT_MS', 120_000, { min: 1 }),
    leaseMs: envInt(env, 'TURN_LEASE_MS', 6_000, { min: 300 }),
    reconcileIntervalMs: envInt(env, 'RECONCILE_INTERVAL_MS', 3_000),
    workerId: `${hostname()}:${process.pid}`,
  };
}

/** Comma-separated http(s) URL prefixes; empty allows nothing. */
function urlPrefixes(env: Env, name: string): string[] {
  const prefixes = (env[name] ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const prefix of prefixes) {
    let url: URL | null = null;
    try {
      url = new URL(prefix);
    } catch {
      // reported below
    }
    if (!url || !['http:', 'https:'].includes(url.protocol)) {
      throw new ConfigError(name, `must list http(s) URL prefixes, got "${prefix}"`);
    }
  }
  return prefixes;
}
