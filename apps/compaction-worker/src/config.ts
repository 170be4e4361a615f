import { z } from 'zod';
import {
  commonConfigOf,
  commonEnv,
  parseEnv,
  workerEnv,
  type CommonConfig,
  type Env,
} from '@portal/contracts';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv, type Limits } from '@portal/prompt';

/** The compaction-worker's environment: every variable it reads, once, in main. */
export const compactionWorkerEnv = z.object({ ...commonEnv, ...workerEnv(3103) });

export interface CompactionWorkerConfig extends CommonConfig {
  healthPort: number;
  /** PORTAL_MODELS_FILE, or the built-in catalogue: the summary runs on the turn's model. */
  models: ModelEntry[];
  /** PORTAL_LIMIT_* over the defaults. */
  limits: Limits;
  logLevel: string;
  shutdownDeadlineMs: number;
  /** The environment read, for the key variables the catalogue names (`apiKeyEnv`). */
  env: Env;
}

export function readConfig(env: Env): CompactionWorkerConfig {
  const vars = parseEnv(compactionWorkerEnv, env);
  return {
    ...commonConfigOf(vars),
    healthPort: vars.HEALTH_PORT,
    models: loadCatalogue(env),
    env,
    limits: limitsFromEnv(env),
    logLevel: vars.LOG_LEVEL,
    shutdownDeadlineMs: vars.SHUTDOWN_DEADLINE_MS,
  };
}
