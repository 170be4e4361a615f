import { envInt, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';

export interface CompactionWorkerConfig extends CommonConfig {
  healthPort: number;
  /** PORTAL_MODELS_FILE, or the built-in catalogue: the summary runs on the turn's model. */
  models: ModelEntry[];
  /** PORTAL_LIMIT_* over the defaults. */
  limits: Limits;
}

export function readConfig(env: Env): CompactionWorkerConfig {
  return {
    ...readCommonConfig(env),
    healthPort: envInt(env, 'HEALTH_PORT', 3103, { min: 1, max: 65535 }),
    models: loadCatalogue(env),
    limits: limitsFromEnv(env),
  };
}
