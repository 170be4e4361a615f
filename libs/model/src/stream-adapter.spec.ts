import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
  InternalServerError,
  RateLimitError,
} from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import {
  adaptChunks,
  BrokenStreamError,
  classifyModelError,
  EmptyReplyError,
  parseRetryAfter,
} from './stream-adapter';

type Delta = ChatCompletionChunk.Choice.Delta & { reasoning_content?: string; reasoning?: string };

function chunk(
  delta: Delta,
  finish: ChatCompletionChunk.Choice['finish_reason'] = null,
): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  };
}

function usageChunk(prompt: number, completion: number, cached?: number): ChatCompletionChunk {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [],
    usage: {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
      ...(cached === undefined ? {} : { prompt_tokens_details: { cached_tokens: cached } }),
    },
  };
}

describe('StreamAdapter', () => {
  it('turns text chunks into text deltas and keeps the finish reason and usage', () => {
    const { deltas, result } = adaptChunks([
      chunk({ role: 'assistant', content: '' }),
      chunk({ content: 'Hello' }),
      chunk({ content: ', world' }),
      chunk({}, 'stop'),
      usageChunk(120, 7, 100),
    ]);
    expect(deltas).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ', world' },
    ]);
    expect(result).toEqual({
      text: 'Hello, world',
      thinking: '',
      toolCalls: [],
      finishReason: 'stop',
      usage: { inputTokens: 120, outputTokens: 7, cachedTokens: 100 },
    });
  });

  it('reads reasoning from reasoning_content and from reasoning', () => {
    const { deltas, result } = adaptChunks([
      chunk({ reasoning_content: 'Think ' }),
      chunk({ reasoning: 'more.' }),
      chunk({ content: 'Done.' }),
      chunk({}, 'stop'),
    ]);
    expect(deltas).toEqual([
      { type: 'thinking', text: 'Think ' },
      { type: 'thinking', text: 'more.' },
      { type: 'text', text: 'Done.' },
    ]);
    expect(result.thinking).toBe('Think more.');
    expect(result.usage).toBeNull();
  });

  it('assembles interleaved tool calls by index', () => {
    const { deltas, result } = adaptChunks([
      chunk({ content: 'Let me look.' }),
      chunk({
        tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'search', arguments: '' } }],
      }),
      chunk({
        tool_calls: [{ index: 1, id: 'c2', type: 'function', function: { name: 'read', arguments: '{"pa' } }],
      }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"query":' } }] }),
      chunk({ tool_calls: [{ index: 1, function: { arguments: 'ge":2}' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Q3"}' } }] }),
      chunk({}, 'tool_calls'),
      usageChunk(50, 20),
    ]);
    expect(deltas).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_call_started', index: 0, callId: 'c1', name: 'search' },
      { type: 'tool_call_started', index: 1, callId: 'c2', name: 'read' },
      { type: 'tool_call_args', index: 1, text: '{"pa' },
      { type: 'tool_call_args', index: 0, text: '{"query":' },
      { type: 'tool_call_args', index: 1, text: 'ge":2}' },
      { type: 'tool_call_args', index: 0, text: '"Q3"}' },
    ]);
    expect(result.toolCalls).toEqual([
      { callId: 'c1', name: 'search', arguments: '{"query":"Q3"}' },
      { callId: 'c2', name: 'read', arguments: '{"page":2}' },
    ]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({ inputTokens: 50, outputTokens: 20, cachedTokens: 0 });
  });

  it('announces a call once its name arrives, with the arguments sent before it', () => {
    const { deltas, result } = adaptChunks([
      chunk({ tool_calls: [{ index: 0, id: 'c9', function: { arguments: '{"a"' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: ':1}' } }] }),
      chunk({}, 'tool_calls'),
    ]);
    expect(deltas).toEqual([
      { type: 'tool_call_started', index: 0, callId: 'c9', name: 'lookup' },
      { type: 'tool_call_args', index: 0, text: '{"a":1}' },
    ]);
    expect(result.toolCalls).toEqual([{ callId: 'c9', name: 'lookup', arguments: '{"a":1}' }]);
  });

  it('gives a call without an id one made from its index', () => {
    const { result } = adaptChunks([
      chunk({ tool_calls: [{ index: 2, function: { name: 'x', arguments: '{}' } }] }),
    ]);
    expect(result.toolCalls).toEqual([{ callId: 'call_2', name: 'x', arguments: '{}' }]);
    expect(result.finishReason).toBeNull();
  });
});

function headers(values: Record<string, string>): Headers {
  return new Headers(values);
}

/** What the SDK throws for an HTTP error with an OpenAI-style body. */
function httpError(
  status: number,
  error: Record<string, unknown>,
  values: Record<string, string> = {},
): APIError {
  return APIError.generate(status, { error }, undefined, headers(values));
}

describe('classifyModelError', () => {
  it('reads 429 as rate_limited with retry-after in seconds or milliseconds', () => {
    const seconds = httpError(429, { message: 'slow down' }, { 'retry-after': '2' });
    expect(seconds).toBeInstanceOf(RateLimitError);
    expect(classifyModelError(seconds)).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 2000,
    });

    const ms = httpError(429, { message: 'slow down' }, { 'retry-after-ms': '250', 'retry-after': '9' });
    expect(classifyModelError(ms)).toMatchObject({ kind: 'rate_limited', retryAfterMs: 250 });

    const none = httpError(429, { message: 'slow down' });
    expect(classifyModelError(none).retryAfterMs).toBeNull();
  });

  it('reads an HTTP date in retry-after', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter(headers({ 'retry-after': 'Wed, 01 Jan 2025 00:00:03 GMT' }), now)).toBe(3000);
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }), now)).toBeNull();
  });

  it('reads 5xx as server', () => {
    const err = httpError(503, { message: 'overloaded' });
    expect(err).toBeInstanceOf(InternalServerError);
    expect(classifyModelError(err)).toMatchObject({ kind: 'server', status: 503 });
  });

  it('reads context overflow from the code or the message', () => {
    const byCode = httpError(400, { message: 'nope', code: 'context_length_exceeded' });
    expect(classifyModelError(byCode).kind).toBe('context_overflow');
    for (const message of [
      "This model's maximum context length is 8192 tokens.",
      'prompt exceeds the context length',
      'Too many tokens in the request',
    ]) {
      const err = httpError(400, { message });
      expect(classifyModelError(err).kind).toBe('context_overflow');
    }
  });

  it('reads other client errors as fatal', () => {
    expect(classifyModelError(httpError(400, { message: 'bad tool schema' })).kind).toBe('fatal');
    expect(classifyModelError(httpError(401, { message: 'bad key' })).kind).toBe('fatal');
    expect(classifyModelError(new Error('boom')).kind).toBe('fatal');
  });

  it('reads connection failures, timeouts and aborts', () => {
    expect(classifyModelError(new APIConnectionTimeoutError()).kind).toBe('timeout');
    expect(classifyModelError(new APIConnectionError({ message: 'refused' })).kind).toBe('broken_stream');
    expect(classifyModelError(new BrokenStreamError('ended early')).kind).toBe('broken_stream');
    expect(classifyModelError(new EmptyReplyError('no text, no tool call')).kind).toBe('empty_reply');
    const terminated = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    expect(classifyModelError(terminated).kind).toBe('broken_stream');
    expect(classifyModelError(new APIUserAbortError()).kind).toBe('aborted');
  });

  it('reads an error event inside an open stream as server, or overflow when it says so', () => {
    expect(
      classifyModelError(new APIError(undefined, { message: 'internal' }, 'internal', undefined)).kind,
    ).toBe('server');
    expect(
      classifyModelError(
        new APIError(undefined, { message: 'maximum context length is 10' }, undefined, undefined),
      ).kind,
    ).toBe('context_overflow');
  });
});
