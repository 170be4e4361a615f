import { envInt, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';

export interface AttachmentIngestConfig extends CommonConfig {
  healthPort: number;
}

export function readConfig(env: Env): AttachmentIngestConfig {
  return { ...readCommonConfig(env), healthPort: envInt(env, 'HEALTH_PORT', 3102, { min: 1, max: 65535 }) };
}
