import OpenAI, { APIConnectionTimeoutError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParamsStreaming } from 'openai/resources/chat/completions';
import type { Effort } from '@portal/domain';
import { Agent } from 'undici';
import type { ModelEntry } from './catalogue';
import {
  startLocalModelServer,
  type LocalModelServer,
  type LocalModelServerOptions,
} from './local-model.server';
import { pooledFetch } from './pooled-fetch';
import { BrokenStreamError, StreamAdapter, type ModelDelta, type StreamResult } from './stream-adapter';

/** A chat request without what the factory decides: model, streaming and effort. */
export type ChatRequest = Omit<
  ChatCompletionCreateParamsStreaming,
  'model' | 'stream' | 'stream_options' | 'reasoning_effort'
>;

export interface StreamChatOptions {
  signal?: AbortSignal;
  /** Sent as reasoning_effort only when the entry says the model reasons. */
  effort?: Effort;
}

/** Deltas as they arrive, then exactly one `done` with the assembled result. */
export type ModelStreamEvent = ModelDelta | { type: 'done'; result: StreamResult };

export interface ModelClientFactoryOptions {
  /** The environment the app read: the catalogue's `apiKeyEnv` names variables of it. */
  env: Record<string, string | undefined>;
  /** Time to the response headers (the SDK's own timeout). Default 120 s. */
  timeoutMs?: number;
  /** Longest silence between two chunks of an open stream. Default 120 s. */
  idleTimeoutMs?: number;
  localModel?: LocalModelServerOptions;
}

/**
 * Creates one openai client per catalogue entry (no SDK retries: retrying is the orchestrator's
 * job) and starts the built-in local model server on first use.
 */
export class ModelClientFactory {
  private readonly clients = new Map<string, Promise<OpenAI>>();
  /** The model servers' keep-alive connections, shared by every client; our timers bound a call. */
  private readonly pool = new Agent({ headersTimeout: 0, bodyTimeout: 0 });
  private readonly fetch = pooledFetch(this.pool);
  private local: Promise<LocalModelServer> | null = null;
  private readonly env: Record<string, string | undefined>;
  private readonly timeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(private readonly options: ModelClientFactoryOptions) {
    this.env = options.env;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
  }

  client(entry: ModelEntry): Promise<OpenAI> {
    let client = this.clients.get(entry.id);
    if (!client) {
      client = this.baseURL(entry).then(
        (baseURL) =>
          new OpenAI({
            baseURL,
            apiKey: (entry.apiKeyEnv && this.env[entry.apiKeyEnv]) || 'none',
            maxRetries: 0,
            timeout: this.timeoutMs,
            fetch: this.fetch,
          }),
      );
      client.catch(() => this.clients.delete(entry.id));
      this.clients.set(entry.id, client);
    }
    return client;
  }

  /**
   * Streams one chat completion. Throws the SDK's errors as they are (see classifyModelError),
   * APIUserAbortError when `signal` aborts, APIConnectionTimeoutError when the stream falls
   * silent, and BrokenStreamError when it ends without a finish reason.
   */
  async *streamChat(
    entry: ModelEntry,
    request: ChatRequest,
    options: StreamChatOptions = {},
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const client = await this.client(entry);
    // The SDK ends a stream quietly on abort, and under Jest its own timeout surfaces as a plain
    // connection error (DOMException from another realm), so abort through our own controller
    // and say why ourselves.
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) controller.abort();
    let ended = false;
    let timedOut: string | null = null;
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number, what: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = `${what} for ${ms} ms`;
        controller.abort();
      }, ms);
    };
    const whyStopped = () => {
      if (timedOut) return new APIConnectionTimeoutError({ message: `Model call timed out: ${timedOut}` });
      if (options.signal?.aborted) return new APIUserAbortError();
      return null;
    };

    try {
      arm(this.timeoutMs, 'no response');
      const stream = await client.chat.completions.create(
        {
          ...request,
          model: entry.model,
          stream: true,
          stream_options: { include_usage: true },
          reasoning_effort: entry.reasoning ? options.effort : undefined,
        },
        { signal: controller.signal },
      );
      const adapter = new StreamAdapter();
      arm(this.idleTimeoutMs, 'no data');
      for await (const chunk of stream) {
        // A slow consumer is not a silent model: the clock stops while deltas are handed over.
        clearTimeout(timer);
        for (const delta of adapter.push(chunk)) yield delta;
        arm(this.idleTimeoutMs, 'no data');
      }
      clearTimeout(timer);
      const stopped = whyStopped();
      if (stopped) throw stopped;
      const result = adapter.finish();
      if (!result.finishReason) throw new BrokenStreamError('The stream ended before the model finished');
      ended = true;
      yield { type: 'done', result };
    } catch (err) {
      throw whyStopped() ?? err;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      // A consumer that stops early leaves the request open otherwise. A finished stream needs no
      // abort (each one builds a DOMException and wakes the fetch's listeners).
      if (!ended) controller.abort();
    }
  }

  async close(): Promise<void> {
    const local = this.local;
    this.local = null;
    this.clients.clear();
    await this.pool.destroy();
    if (local) await (await local).close();
  }

  private async baseURL(entry: ModelEntry): Promise<string> {
    if (entry.builtin !== 'local') return entry.baseURL;
    if (!this.local) {
      this.local = startLocalModelServer(this.options.localModel);
      this.local.catch(() => (this.local = null));
    }
    return (await this.local).baseURL;
  }
}
