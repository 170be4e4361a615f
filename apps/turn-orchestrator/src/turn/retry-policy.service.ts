import { Inject, Injectable } from '@nestjs/common';
import type { ModelErrorClass } from '@portal/model';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';

const RETRYABLE: ReadonlySet<ModelErrorClass['kind']> = new Set([
  'rate_limited',
  'server',
  'timeout',
  'broken_stream',
  'empty_reply',
]);

/** How long to wait before each retry of a model call, and the waiting itself (a seam for tests). */
@Injectable()
export class RetryPolicy {
  constructor(@Inject(CONFIG) private readonly config: TurnOrchestratorConfig) {}

  get retries(): number {
    return this.config.modelRetries;
  }

  /** A 429, a 5xx, a broken stream, a timeout or an empty reply is a fault worth another attempt. */
  retryable(failure: ModelErrorClass): boolean {
    return RETRYABLE.has(failure.kind);
  }

  /** A retryable failure is tried again, MODEL_RETRIES times. */
  shouldRetry(failure: ModelErrorClass, attempt: number): boolean {
    return this.retryable(failure) && attempt < this.retries;
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

/** `model_error: HTTP 500 after 4 attempts: <the provider's message>`. */
export function modelError(failure: ModelErrorClass, attempts: number): string {
  const what = failure.status !== null ? `HTTP ${failure.status}` : failure.kind.replaceAll('_', ' ');
  const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
  return `model_error: ${what}${tries}: ${failure.message}`;
}
