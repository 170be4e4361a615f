import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Effort, Turn } from '@portal/domain';
import {
  BrokenStreamError,
  classifyModelError,
  ModelClientFactory,
  type ChatRequest,
  type ModelDelta,
  type ModelEntry,
  type ModelErrorClass,
  type ModelToolCall,
  type StreamResult,
} from '@portal/model';
import { observeModelCall, PortalMetrics } from '@portal/queue';
import { RetryPolicy } from './retry-policy.service';
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
  | { kind: 'overflow' }
  | { kind: 'failed'; error: string };

const RETRYABLE: ReadonlySet<ModelErrorClass['kind']> = new Set([
  'rate_limited',
  'server',
  'timeout',
  'broken_stream',
]);

/**
 * One model call of a turn: streamed through ModelClientFactory, its deltas published as they
 * arrive, retried with backoff on 429, 5xx, a broken stream or a timeout. Each attempt starts
 * afresh: what a failed attempt streamed is dropped (its blocks never finish).
 */
@Injectable()
export class ModelCaller {
  constructor(
    @Inject(ModelClientFactory) private readonly models: ModelClientFactory,
    @Inject(RetryPolicy) private readonly retry: RetryPolicy,
    @Inject(TurnStore) private readonly store: TurnStore,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  async call(
    turn: Turn,
    model: ModelEntry,
    request: ChatRequest,
    opts: { effort: Effort; signal: AbortSignal },
  ): Promise<CallOutcome> {
    for (let attempt = 0; ; attempt++) {
      const stream = new PublishedStream(turn, this.store);
      try {
        const events = this.models.streamChat(model, request, opts);
        for await (const event of observeModelCall(this.metrics, { model: model.id, kind: 'turn' }, events)) {
          if (event.type === 'done') {
            await stream.flushed();
            return { kind: 'answered', result: event.result, ids: stream.ids };
          }
          stream.push(event);
        }
        throw new BrokenStreamError('The model stream ended without a result');
      } catch (err) {
        await stream.flushed();
        if (opts.signal.aborted) return { kind: 'stopped', partial: stream.output, ids: stream.ids };
        const failure = classifyModelError(err);
        if (failure.kind === 'context_overflow') return { kind: 'overflow' };
        if (!RETRYABLE.has(failure.kind) || attempt >= this.retry.retries) {
          return { kind: 'failed', error: modelError(failure, attempt + 1) };
        }
        await this.retry.wait(this.retry.delayMs(attempt, failure.retryAfterMs), opts.signal);
        if (opts.signal.aborted) {
          return { kind: 'stopped', partial: { thinking: '', text: '', toolCalls: [] }, ids: stream.ids };
        }
      }
    }
  }
}

/** `model_error: HTTP 500 after 4 attempts: <the provider's message>`. */
export function modelError(failure: ModelErrorClass, attempts: number): string {
  const what = failure.status !== null ? `HTTP ${failure.status}` : failure.kind.replace('_', ' ');
  const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
  return `model_error: ${what}${tries}: ${failure.message}`;
}

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
  private publishing: Promise<void> = Promise.resolve();

  constructor(
    private readonly turn: Turn,
    private readonly store: TurnStore,
  ) {}

  push(delta: ModelDelta): void {
    const turnId = this.turn.id;
    if (delta.type === 'thinking' || delta.type === 'text') {
      const blockId = this.ids[delta.type];
      if (this.output[delta.type] === '')
        this.send({ type: 'block_started', turnId, blockId, kind: delta.type });
      this.output[delta.type] += delta.text;
      const type = delta.type === 'text' ? 'text_delta' : 'thinking_delta';
      this.send({ type, turnId, blockId, text: delta.text });
    } else if (delta.type === 'tool_call_started') {
      this.output.toolCalls[delta.index] = { callId: delta.callId, name: delta.name, arguments: '' };
      this.send({ type: 'block_started', turnId, blockId: this.ids.toolUse(delta.index), kind: 'tool_use' });
    }
  }

  /** Resolves once every event so far is published; rejects with the first publishing error. */
  flushed(): Promise<void> {
    return this.publishing;
  }

  private send(event: Parameters<TurnStore['publish']>[1]): void {
    this.publishing = this.publishing.then(() => this.store.publish(this.turn, event));
    // Marked handled here; `flushed()` still hands the rejection to the caller.
    this.publishing.catch(() => undefined);
  }
}
