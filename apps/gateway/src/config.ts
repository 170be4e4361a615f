import { z } from 'zod';
import {
  commonConfigOf,
  commonEnv,
  envVar,
  parseEnv,
  toolsEnv,
  type CommonConfig,
  type Env,
} from '@portal/contracts';
import { readPortalFloor } from '@portal/application';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';
import {
  attachmentsEnv,
  readAttachmentsConfig,
  type AttachmentsConfig,
} from './attachments/attachments.config';
import { rateLimitEnv, readRateLimitConfig, type RateLimitConfig } from './common/rate-limit';
import { readSseConfig, sseEnv, type SseConfig } from './events/sse.config';

/** The gateway's environment: every variable it reads, once, in main. */
export const gatewayEnv = z.object({
  ...commonEnv,
  ...toolsEnv,
  PORT: envVar.int('Gateway HTTP port; the web client is served from `/`', 3000, { min: 1, max: 65535 }),
  HOST: envVar.string('Interface the gateway listens on', '0.0.0.0'),
  ...attachmentsEnv,
  ...rateLimitEnv,
  ...sseEnv,
  PORTAL_OPERATOR_ORGS: envVar.list(
    "Comma-separated orgs whose admins may open the queue dashboard at /admin/queues (it shows every org's jobs)",
  ),
  SESSION_TTL: envVar.duration('How long a browser session lives without a request', '12h', { minMs: 1000 }),
});

export interface GatewayConfig extends CommonConfig {
  port: number;
  host: string;
  bootstrapFile: string | null;
  /** The model catalogue; the first entry is the default model. */
  catalogue: ModelEntry[];
  /** URL prefixes an agent's HTTP tools must start with (PORTAL_TOOL_URL_ALLOW). */
  toolUrlAllow: string[];
  limits: Limits;
  /** Layer 1's first part: the bootstrap file's `portalFloor`, else the default. */
  portalFloor: string;
  attachments: AttachmentsConfig;
  /** Per-API-key request limit (RATE_LIMIT_PER_MINUTE). */
  rateLimit: RateLimitConfig;
  /** Server-Sent Events streams: per-user cap, buffer per client, heartbeat. */
  sse: SseConfig;
  /**
   * Orgs whose admins may open the queue dashboard (PORTAL_OPERATOR_ORGS, comma-separated; none by
   * default): it shows every org's jobs, so it is for the operators of the portal only.
   */
  operatorOrgs: string[];
  /** How long a browser session lives without a request (SESSION_TTL, 12 h by default). */
  sessionTtlMs: number;
  /** The environment read, for the variables the bootstrap file names (an OIDC `clientSecretEnv`). */
  env: Env;
  logLevel: string;
  /** BLOB_STORE as set: BlobStoreModule opens the store it names. */
  blobStore: string;
}

/** Nest injection token of the gateway's one config object. */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');

export function readConfig(env: Env): GatewayConfig {
  const vars = parseEnv(gatewayEnv, env);
  const catalogue = loadCatalogue(env);
  return {
    ...commonConfigOf(vars),
    port: vars.PORT,
    host: vars.HOST,
    bootstrapFile: vars.PORTAL_BOOTSTRAP_FILE ?? null,
    catalogue,
    toolUrlAllow: vars.PORTAL_TOOL_URL_ALLOW,
    limits: limitsFromEnv(env),
    portalFloor: readPortalFloor(vars.PORTAL_BOOTSTRAP_FILE ?? null),
    attachments: readAttachmentsConfig(env, catalogue),
    rateLimit: readRateLimitConfig(env),
    sse: readSseConfig(env),
    operatorOrgs: vars.PORTAL_OPERATOR_ORGS,
    sessionTtlMs: vars.SESSION_TTL,
    env,
    logLevel: vars.LOG_LEVEL,
    blobStore: vars.BLOB_STORE,
  };
}
