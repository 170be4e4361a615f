import { envInt, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';

export interface CompactionWorkerConfig extends CommonConfig {
  healthPort: number;
}

export function readConfig(env: Env): CompactionWorkerConfig {
  return { ...readCommonConfig(env), healthPort: envInt(env, 'HEALTH_PORT', 3103, { min: 1, max: 65535 }) };
}
