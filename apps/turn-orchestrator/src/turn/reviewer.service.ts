import { Inject, Injectable, Logger } from '@nestjs/common';
import type { OrgId, Turn } from '@portal/domain';
import {
  classifyModelError,
  findModel,
  ModelClientFactory,
  type ModelEntry,
  type StreamResult,
} from '@portal/model';
import { readVerdict, reviewPrompt, type ReviewVerdict } from '@portal/prompt';
import { observeModelCall, PortalMetrics } from '@portal/observability';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { modelError, RetryPolicy } from './retry-policy.service';
import { SentenceGate } from './sentence-gate.util';
import { TurnStore } from './turn-store.service';

/** The agent's reviewer model, and the org the review calls' usage rows belong to. */
export interface ReviewerOf {
  orgId: OrgId;
  model: string;
}

/**
 * The output guardrail's `review` calls (SPEC 3). Each call has its usage row (kind `review`,
 * priced for the reviewer, never touching `contextTokens`). It fails closed: a reviewer missing
 * from the catalogue, or a call still failing after its retries, blocks the sentence.
 */
@Injectable()
export class Reviewer {
  private readonly logger = new Logger(Reviewer.name);

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(ModelClientFactory) private readonly models: ModelClientFactory,
    @Inject(RetryPolicy) private readonly retry: RetryPolicy,
    @Inject(TurnStore) private readonly store: TurnStore,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  /**
   * The text of one attempt of a model call, reviewed before `release` shows it. `key` names the
   * attempt (its text block id): review n's usage row is recorded once under `review:<key>:<n>`.
   */
  open(
    turn: Turn,
    reviewer: ReviewerOf,
    opts: { key: string; signal: AbortSignal; release: (sentence: string) => void },
  ): ReviewedText {
    return new ReviewedText(
      (input, n, signal) => this.review(turn, reviewer, input, `review:${opts.key}:${n}`, signal),
      opts.release,
      opts.signal,
    );
  }

  /** One review call, retried like a turn's calls. Throws only when `signal` aborts. */
  async review(
    turn: Turn,
    reviewer: ReviewerOf,
    input: { shown: string; sentence: string },
    callKey: string,
    signal: AbortSignal,
  ): Promise<ReviewVerdict> {
    const model = findModel(this.config.catalogue, reviewer.model);
    if (!model)
      return { pass: false, reason: `the reviewer "${reviewer.model}" is not in the model catalogue` };
    const request = { messages: reviewPrompt(input) };
    for (let attempt = 0; ; attempt++) {
      let result: StreamResult | null = null;
      try {
        const events = this.models.streamChat(model, request, { signal });
        for await (const event of observeModelCall(
          this.metrics,
          { model: model.id, kind: 'review' },
          events,
        )) {
          if (event.type === 'done') result = event.result;
        }
      } catch (err) {
        if (signal.aborted) throw err;
        const failure = classifyModelError(err);
        if (!this.retry.shouldRetry(failure, attempt)) {
          return { pass: false, reason: `the review call failed (${modelError(failure, attempt + 1)})` };
        }
        await this.retry.wait(this.retry.delayMs(attempt, failure.retryAfterMs), signal);
        continue;
      }
      if (result) await this.record(turn, reviewer.orgId, model, result, callKey);
      return readVerdict(result?.text ?? '');
    }
  }

  /** The usage row; a failure to write it is logged and leaves the verdict as it is. */
  private async record(
    turn: Turn,
    orgId: OrgId,
    model: ModelEntry,
    result: StreamResult,
    callKey: string,
  ): Promise<void> {
    if (!result.usage) return;
    try {
      await this.store.recordSideCall(orgId, turn, { kind: 'review', model, usage: result.usage, callKey });
    } catch (err) {
      this.logger.warn(`turn ${turn.id}: review usage not recorded (${(err as Error).message})`);
    }
  }
}

/**
 * One attempt's text on its way to people: cut into sentences, reviewed one after another (each
 * review reads what was shown before it) while the model goes on streaming, each released once
 * passed. A blocked sentence is never released, nor anything after it, and `signal` aborts so the
 * model stream stops.
 */
export class ReviewedText {
  /** Why the reviewer blocked a sentence; null while it has blocked none. */
  blocked: string | null = null;
  /** Aborts on the call's signal, on a block, or on `close()`: the model stream listens to it. */
  readonly signal: AbortSignal;
  private readonly stop = new AbortController();
  private readonly gate = new SentenceGate();
  private shown = '';
  private reviewed = 0;
  private reviews: Promise<void> = Promise.resolve();

  constructor(
    private readonly review: (
      input: { shown: string; sentence: string },
      n: number,
      signal: AbortSignal,
    ) => Promise<ReviewVerdict>,
    private readonly release: (sentence: string) => void,
    signal: AbortSignal,
  ) {
    this.signal = AbortSignal.any([signal, this.stop.signal]);
  }

  push(text: string): void {
    for (const sentence of this.gate.push(text)) this.enqueue(sentence);
  }

  /**
   * The text has ended: resolves once every sentence is released or one is blocked; rejects when
   * the reviews were stopped first.
   */
  end(): Promise<void> {
    for (const sentence of this.gate.end()) this.enqueue(sentence);
    return this.reviews;
  }

  /** The attempt is over: stops a review in flight; nothing more is released. */
  close(): void {
    this.stop.abort();
  }

  private enqueue(sentence: string): void {
    this.reviews = this.reviews.then(async () => {
      if (this.blocked !== null) return;
      this.signal.throwIfAborted();
      const verdict: ReviewVerdict =
        sentence.trim() === ''
          ? { pass: true }
          : await this.review({ shown: this.shown, sentence }, this.reviewed++, this.signal);
      this.signal.throwIfAborted();
      if (verdict.pass) {
        this.shown += sentence;
        this.release(sentence);
      } else {
        this.blocked = verdict.reason;
        this.stop.abort();
      }
    });
    // Marked handled here; `end()` still hands the rejection to the caller.
    this.reviews.catch(() => undefined);
  }
}
