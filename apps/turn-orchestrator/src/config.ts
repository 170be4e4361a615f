import { envInt, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';

export interface TurnOrchestratorConfig extends CommonConfig {
  healthPort: number;
}

export function readConfig(env: Env): TurnOrchestratorConfig {
  return { ...readCommonConfig(env), healthPort: envInt(env, 'HEALTH_PORT', 3101, { min: 1, max: 65535 }) };
}
