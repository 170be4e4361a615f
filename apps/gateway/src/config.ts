import { envInt, envString, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';

export interface GatewayConfig extends CommonConfig {
  port: number;
  host: string;
  modelsFile: string | null;
  bootstrapFile: string | null;
  eventRetentionMs: number;
}

export function readConfig(env: Env): GatewayConfig {
  return {
    ...readCommonConfig(env),
    port: envInt(env, 'PORT', 3000, { min: 1, max: 65535 }),
    host: envString(env, 'HOST', '0.0.0.0'),
    modelsFile: env.PORTAL_MODELS_FILE || null,
    bootstrapFile: env.PORTAL_BOOTSTRAP_FILE || null,
    eventRetentionMs: envInt(env, 'EVENT_RETENTION_MS', 24 * 60 * 60 * 1000, { min: 60_000 }),
  };
}
