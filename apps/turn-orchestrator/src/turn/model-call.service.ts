import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Effort, Turn } from '@portal/domain';
import {
  BrokenStreamError,
  classifyModelError,
  EmptyReplyError,
  ModelClientFactory,
  type ChatRequest,
  type ModelDelta,
  type ModelEntry,
  type ModelToolCall,
  type StreamResult,
  type TokenUsage,
} from '@portal/model';
import { observeModelCall, PortalMetrics } from '@portal/observability';
import { modelError, RetryPolicy } from './retry-policy.service';
import { Reviewer, type ReviewerOf } from './reviewer.service';
import { TurnStore } from './turn-store.service';
import type { CallBlockIds } from './turn-steps.util';

export interface CallOutput {
  thinking: string;
  text: string;
  toolCalls: ModelToolCall[];
}

export type CallOutcome =
  | { kind: 'answered'; result: StreamResult; ids: CallBlockIds }
  /** `signal` aborted: what had streamed of the last attempt. */
  | { kind: 'stopped'; partial: CallOutput; ids: CallBlockIds }
  /** The reviewer blocked a sentence: the text shown before it; usage when the model had finished. */
  | { kind: 'blocked'; error: string; partial: CallOutput; ids: CallBlockIds; usage: TokenUsage | null }
  | { kind: 'overflow' }
  /** A retryable fault outlived every retry: the turn is cut off (SPEC 2). */
  | { kind: 'out_of_retries'; error: string }
  | { kind: 'failed'; error: string };

/**
 * One model call of a turn: streamed through ModelClientFactory, its deltas published as they
 * arrive, retried with backoff on 429, 5xx, a broken stream or a timeout. Each attempt starts
 * afresh: what a failed attempt streamed is dropped (its blocks never finish). With a `reviewer`
 * its text is published sentence by sentence as the reviewer passes it (SPEC 3).
 */
@Injectable()
export class ModelCaller {
  constructor(
    @Inject(ModelClientFactory) private readonly models: ModelClientFactory,
    @Inject(RetryPolicy) private readonly retry: RetryPolicy,
    @Inject(TurnStore) private readonly store: TurnStore,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
    @Inject(Reviewer) private readonly reviewer: Reviewer,
  ) {}

  async call(
    turn: Turn,
    model: ModelEntry,
    request: ChatRequest,
    opts: {
      effort: Effort;
      signal: AbortSignal;
      reviewer?: ReviewerOf | null;
      /** Records the usage of an attempt the provider answered that is still retried (an empty reply). */
      spent?: (usage: TokenUsage, ids: CallBlockIds) => Promise<void>;
    },
  ): Promise<CallOutcome> {
    for (let attempt = 0; ; attempt++) {
      const stream = new PublishedStream(turn, this.store);
      const review = opts.reviewer
        ? this.reviewer.open(turn, opts.reviewer, {
            key: stream.ids.text,
            signal: opts.signal,
            release: (sentence) => stream.show('text', sentence),
          })
        : null;
      try {
        const events = this.models.streamChat(model, request, {
          effort: opts.effort,
          signal: review?.signal ?? opts.signal,
        });
        for await (const event of observeModelCall(this.metrics, { model: model.id, kind: 'turn' }, events)) {
          if (event.type === 'done') {
            const { text, toolCalls, usage } = event.result;
            if (text === '' && !toolCalls.length) {
              if (usage) await opts.spent?.(usage, stream.ids);
              throw new EmptyReplyError('The model answered with neither text nor a tool call');
            }
            await review?.end();
            if (review?.blocked) return blocked(review.blocked, stream, event.result.usage);
            return { kind: 'answered', result: event.result, ids: stream.ids };
          }
          if (review && event.type === 'text') review.push(event.text);
          else stream.push(event);
        }
        throw new BrokenStreamError('The model stream ended without a result');
      } catch (err) {
        review?.close();
        if (opts.signal.aborted) return { kind: 'stopped', partial: stream.output, ids: stream.ids };
        if (review?.blocked) return blocked(review.blocked, stream, null);
        const failure = classifyModelError(err);
        if (failure.kind === 'context_overflow') return { kind: 'overflow' };
        if (!this.retry.shouldRetry(failure, attempt)) {
          const error = modelError(failure, attempt + 1);
          return this.retry.retryable(failure)
            ? { kind: 'out_of_retries', error }
            : { kind: 'failed', error };
        }
        await this.retry.wait(this.retry.delayMs(attempt, failure.retryAfterMs), opts.signal);
        if (opts.signal.aborted) {
          return { kind: 'stopped', partial: { thinking: '', text: '', toolCalls: [] }, ids: stream.ids };
        }
      }
    }
  }
}

function blocked(reason: string, stream: PublishedStream, usage: TokenUsage | null): CallOutcome {
  return {
    kind: 'blocked',
    error: `blocked_by_review: ${reason}`,
    partial: stream.output,
    ids: stream.ids,
    usage,
  };
}

const logger = new Logger('ModelCaller');

/**
 * The deltas of one attempt: `block_started` when a thinking, text or tool-use block begins, then
 * its deltas, published in order without holding up the stream.
 */
class PublishedStream {
  readonly output: CallOutput = { thinking: '', text: '', toolCalls: [] };
  private readonly toolUseIds: string[] = [];
  readonly ids: CallBlockIds = {
    thinking: randomUUID(),
    text: randomUUID(),
    toolUse: (index) => (this.toolUseIds[index] ??= randomUUID()),
  };
  private failed = false;

  constructor(
    private readonly turn: Turn,
    private readonly store: TurnStore,
  ) {}

  push(delta: ModelDelta): void {
    const turnId = this.turn.id;
    if (delta.type === 'thinking' || delta.type === 'text') {
      this.show(delta.type, delta.text);
    } else if (delta.type === 'tool_call_started') {
      this.output.toolCalls[delta.index] = { callId: delta.callId, name: delta.name, arguments: '' };
      this.send({ type: 'block_started', turnId, blockId: this.ids.toolUse(delta.index), kind: 'tool_use' });
    }
  }

  /** Text or thinking people may see now: added to the output and published. */
  show(kind: 'thinking' | 'text', text: string): void {
    const turnId = this.turn.id;
    const blockId = this.ids[kind];
    if (this.output[kind] === '') this.send({ type: 'block_started', turnId, blockId, kind });
    this.output[kind] += text;
    this.send({ type: kind === 'text' ? 'text_delta' : 'thinking_delta', turnId, blockId, text });
  }

  /**
   * Sent at once, never waited for: the store appends a conversation's events in the order they
   * were sent, so the answer's events, stored and published after the call, still follow these
   * (issue #29). A delta lost to Redis is not the call's failure: the answer's `block_finished`
   * carries the whole text.
   */
  private send(event: Parameters<TurnStore['publish']>[1]): void {
    this.store.publish(this.turn, event).catch((err: Error) => {
      if (!this.failed) logger.warn(`turn ${this.turn.id}: deltas not published (${err.message})`);
      this.failed = true;
    });
  }
}
