import {
  ConfigError,
  envDuration,
  envInt,
  envString,
  readCommonConfig,
  type CommonConfig,
  type Env,
} from '@portal/contracts';
import { readPortalFloor } from '@portal/dal';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';
import { readAttachmentsConfig, type AttachmentsConfig } from './attachments/attachments.config';
import { readRateLimitConfig, type RateLimitConfig } from './common/rate-limit';

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
  /**
   * Orgs whose admins may open the queue dashboard (PORTAL_OPERATOR_ORGS, comma-separated; none by
   * default): it shows every org's jobs, so it is for the operators of the portal only.
   */
  operatorOrgs: string[];
  /** How long a browser session lives without a request (SESSION_TTL, 12 h by default). */
  sessionTtlMs: number;
  /** The environment read, for the variables the bootstrap file names (an OIDC `clientSecretEnv`). */
  env: Env;
}

/** Nest injection token of the gateway's one config object. */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');

export function readConfig(env: Env): GatewayConfig {
  const catalogue = loadCatalogue(env);
  return {
    ...readCommonConfig(env),
    port: envInt(env, 'PORT', 3000, { min: 1, max: 65535 }),
    host: envString(env, 'HOST', '0.0.0.0'),
    bootstrapFile: env.PORTAL_BOOTSTRAP_FILE || null,
    catalogue,
    toolUrlAllow: readToolUrlAllow(env),
    limits: limitsFromEnv(env),
    portalFloor: readPortalFloor(env.PORTAL_BOOTSTRAP_FILE || null),
    attachments: readAttachmentsConfig(env, catalogue),
    rateLimit: readRateLimitConfig(env),
    operatorOrgs: envString(env, 'PORTAL_OPERATOR_ORGS', '')
      .split(',')
      .map((org) => org.trim())
      .filter(Boolean),
    sessionTtlMs: envDuration(env, 'SESSION_TTL', 12 * 3_600_000, { minMs: 1000 }),
    env,
  };
}

function readToolUrlAllow(env: Env): string[] {
  const prefixes = envString(env, 'PORTAL_TOOL_URL_ALLOW', '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const prefix of prefixes) {
    if (!/^https?:\/\/[^/?#]+/.test(prefix)) {
      throw new ConfigError('PORTAL_TOOL_URL_ALLOW', `entries must be http(s) URL prefixes, got "${prefix}"`);
    }
  }
  return prefixes;
}
