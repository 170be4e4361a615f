import { Inject, Injectable } from '@nestjs/common';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

/** How long to wait before each retry of a model call, and the waiting itself (a seam for tests). */
@Injectable()
export class RetryPolicy {
  constructor(@Inject(CONFIG) private readonly config: TurnOrchestratorConfig) {}

  get retries(): number {
    return this.config.modelRetries;
  }

  /**
   * The provider's retry-after when it sent one, else exponential backoff with jitter from
   * MODEL_RETRY_BASE_MS; never more than MODEL_RETRY_MAX_MS. `attempt` counts from 0.
   */
  delayMs(attempt: number, retryAfterMs: number | null): number {
    const { modelRetryBaseMs: base, modelRetryMaxMs: max } = this.config;
    const backoff = base * 2 ** attempt * (0.8 + Math.random() * 0.4);
    return Math.round(Math.min(max, retryAfterMs ?? backoff));
  }

  /** Resolves after `ms`, or as soon as `signal` aborts. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
