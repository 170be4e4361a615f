import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import type { TokenUsage } from './catalogue';

export type ModelDelta =
  | { type: 'text'; text: string }
  | { type: 'thinking'; text: string }
  | { type: 'tool_call_started'; index: number; callId: string; name: string }
  | { type: 'tool_call_args'; index: number; text: string };

export interface ModelToolCall {
  callId: string;
  name: string;
  /** JSON text as the model sent it, possibly malformed. */
  arguments: string;
}

export interface StreamResult {
  text: string;
  thinking: string;
  toolCalls: ModelToolCall[];
  /** null when the stream ended without one. */
  finishReason: string | null;
  usage: TokenUsage | null;
}

interface PendingCall {
  callId: string;
  name: string;
  arguments: string;
  started: boolean;
}

/** Some providers stream reasoning under fields the SDK types do not know. */
type ReasoningDelta = { reasoning_content?: unknown; reasoning?: unknown };

/**
 * Turns ChatCompletionChunk objects (first choice only) into domain deltas and assembles the
 * final result. Tool-call fragments are assembled by their index; a call is announced once its
 * name is known, with any arguments that arrived before it.
 */
export class StreamAdapter {
  private text = '';
  private thinking = '';
  private readonly calls = new Map<number, PendingCall>();
  private finishReason: string | null = null;
  private usage: TokenUsage | null = null;

  push(chunk: ChatCompletionChunk): ModelDelta[] {
    const deltas: ModelDelta[] = [];
    if (chunk.usage) {
      this.usage = {
        inputTokens: chunk.usage.prompt_tokens ?? 0,
        outputTokens: chunk.usage.completion_tokens ?? 0,
        cachedTokens: chunk.usage.prompt_tokens_details?.cached_tokens ?? 0,
      };
    }
    const choice = chunk.choices?.find((c) => c.index === 0) ?? chunk.choices?.[0];
    if (!choice) return deltas;
    const delta = choice.delta ?? {};

    const reasoning = (delta as ReasoningDelta).reasoning_content ?? (delta as ReasoningDelta).reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') {
      this.thinking += reasoning;
      deltas.push({ type: 'thinking', text: reasoning });
    }
    for (const content of [delta.content, delta.refusal]) {
      if (typeof content === 'string' && content !== '') {
        this.text += content;
        deltas.push({ type: 'text', text: content });
      }
    }
    for (const part of delta.tool_calls ?? []) {
      let call = this.calls.get(part.index);
      if (!call) {
        call = { callId: '', name: '', arguments: '', started: false };
        this.calls.set(part.index, call);
      }
      if (part.id && !call.callId) call.callId = part.id;
      if (part.function?.name && !call.started) call.name += part.function.name;
      const args = part.function?.arguments ?? '';
      call.arguments += args;
      if (!call.started && call.name) {
        call.started = true;
        call.callId ||= `call_${part.index}`;
        deltas.push({ type: 'tool_call_started', index: part.index, callId: call.callId, name: call.name });
        if (call.arguments) deltas.push({ type: 'tool_call_args', index: part.index, text: call.arguments });
      } else if (call.started && args) {
        deltas.push({ type: 'tool_call_args', index: part.index, text: args });
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return deltas;
  }

  finish(): StreamResult {
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        callId: call.callId || `call_${index}`,
        name: call.name,
        arguments: call.arguments,
      }));
    return {
      text: this.text,
      thinking: this.thinking,
      toolCalls,
      finishReason: this.finishReason,
      usage: this.usage,
    };
  }
}

/** Runs a whole recorded stream through a fresh adapter. */
export function adaptChunks(chunks: Iterable<ChatCompletionChunk>): {
  deltas: ModelDelta[];
  result: StreamResult;
} {
  const adapter = new StreamAdapter();
  const deltas: ModelDelta[] = [];
  for (const chunk of chunks) deltas.push(...adapter.push(chunk));
  return { deltas, result: adapter.finish() };
}

/** The stream ended (or the connection dropped) before the model finished its answer. */
export class BrokenStreamError extends Error {
  override name = 'BrokenStreamError';
}

/** The model finished with neither text nor a tool call: a fault of the model, not an answer (SPEC 8). */
export class EmptyReplyError extends Error {
  override name = 'EmptyReplyError';
}

export type ModelErrorKind =
  | 'rate_limited'
  | 'server'
  | 'context_overflow'
  | 'timeout'
  | 'broken_stream'
  | 'empty_reply'
  | 'aborted'
  | 'fatal';

export interface ModelErrorClass {
  kind: ModelErrorKind;
  /** From retry-after-ms / retry-after when the provider sent them. */
  retryAfterMs: number | null;
  status: number | null;
  message: string;
}

const OVERFLOW = /maximum context length|context length|context window|too many tokens/i;

/**
 * What the orchestrator should do about a failed model call: retry later (`rate_limited`,
 * `server`, `timeout`, `broken_stream`, `empty_reply`), compact (`context_overflow`), stop (`aborted`: the
 * caller's signal; `fatal`: anything else, e.g. 401 or a bad request).
 */
export function classifyModelError(err: unknown): ModelErrorClass {
  const message = isErrorLike(err) ? err.message : String(err);
  const result = (
    kind: ModelErrorKind,
    status: number | null = null,
    retryAfterMs: number | null = null,
  ) => ({
    kind,
    retryAfterMs,
    status,
    message,
  });

  if (err instanceof APIUserAbortError) return result('aborted');
  if (err instanceof APIConnectionTimeoutError) return result('timeout');
  if (err instanceof APIConnectionError || err instanceof BrokenStreamError) return result('broken_stream');
  if (err instanceof EmptyReplyError) return result('empty_reply');
  if (err instanceof APIError) {
    const status = typeof err.status === 'number' ? err.status : null;
    const retryAfterMs = parseRetryAfter(err.headers);
    if (isOverflow(err)) return result('context_overflow', status, retryAfterMs);
    if (status === 429) return result('rate_limited', status, retryAfterMs);
    if (status === 408) return result('timeout', status, retryAfterMs);
    // No status: an error event inside an already open stream, which providers send when they fail.
    if (status === null || status >= 500) return result('server', status, retryAfterMs);
    return result('fatal', status, retryAfterMs);
  }
  if (isAbort(err)) return result('aborted');
  if (isSocketError(err)) return result('broken_stream');
  return result('fatal');
}

function isOverflow(err: APIError): boolean {
  if (err.code === 'context_length_exceeded') return true;
  return (err.status === 400 || err.status === 413 || err.status === undefined) && OVERFLOW.test(err.message);
}

export function parseRetryAfter(headers: Headers | undefined | null, now = Date.now()): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '' && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const after = headers.get('retry-after');
  if (after === null || after.trim() === '') return null;
  if (Number.isFinite(Number(after))) return Math.max(0, Number(after) * 1000);
  const date = Date.parse(after);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

// Errors thrown inside Node (undici) fail `instanceof Error` under Jest, which runs tests in
// another realm, so these checks look at the shape.
interface ErrorLike {
  name?: unknown;
  message: string;
  code?: unknown;
  cause?: unknown;
}

function isErrorLike(err: unknown): err is ErrorLike {
  return typeof err === 'object' && err !== null && typeof (err as ErrorLike).message === 'string';
}

function isAbort(err: unknown): boolean {
  return isErrorLike(err) && err.name === 'AbortError';
}

// undici fails a body read whose socket closed with TypeError('terminated'), cause SocketError.
function isSocketError(err: unknown): boolean {
  if (!isErrorLike(err)) return false;
  const cause = isErrorLike(err.cause) ? err.cause : null;
  const code = String(cause?.code ?? err.code ?? '');
  return (
    err.message === 'terminated' ||
    /^(ECONNRESET|EPIPE|ECONNREFUSED|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code) ||
    /socket hang up|other side closed/i.test(`${err.message} ${cause?.message ?? ''}`)
  );
}
