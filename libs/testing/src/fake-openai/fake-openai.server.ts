import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  approxTokens,
  readBody,
  writeApiError,
  writeChatCompletion,
  writeJson,
  type WireUsage,
} from '@portal/model';

export interface FakeToolCall {
  /** Default `call_<n>`, counted per server. */
  id?: string;
  name: string;
  /** An object is sent as JSON; a string is sent as is, so it can be malformed JSON. */
  arguments: string | Record<string, unknown>;
}

/** A model answer: reasoning, then text, then tool calls, streamed when the request asks. */
export interface FakeAnswer {
  kind?: 'answer';
  text?: string;
  reasoning?: string;
  /** Field the reasoning deltas use. Default `reasoning_content`. */
  reasoningField?: 'reasoning_content' | 'reasoning';
  toolCalls?: FakeToolCall[];
  /** Default: about four characters a token; null: no usage at all. */
  usage?: WireUsage | null;
  /** Default `tool_calls` with tool calls, else `stop`; null: the stream ends without one. */
  finishReason?: string | null;
  /** Characters per text, reasoning and argument fragment. Default: words, arguments by 12. */
  chunkSize?: number;
  /** Wait before each chunk. */
  delayMs?: number;
  /** Destroy the socket after this many chunks (0: before answering). */
  breakAfterChunks?: number;
}

export interface FakeHttpError {
  kind: 'error';
  status: number;
  /** Default `{ error: { message, type, code: null } }`. */
  body?: unknown;
  headers?: Record<string, string>;
}

/** Never answers; the request stays open until the client gives up or the server closes. */
export interface FakeHang {
  kind: 'hang';
}

/** A string is a plain text answer. */
export type FakeScript = string | FakeAnswer | FakeHttpError | FakeHang;

export interface FakeRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, or the raw text when it was not JSON. */

  body: any;
}

export type FakeResponder = (request: FakeRequest) => FakeScript | Promise<FakeScript>;

export interface FakeOpenAI {
  /** Root URL for the openai SDK, ending in /v1. */
  baseURL: string;
  /** Every request received, in order. */
  requests: FakeRequest[];
  /** Queue answers for the next chat requests; a function decides from the request. */
  enqueue(...scripts: (FakeScript | FakeResponder)[]): void;
  /** Answers chat requests once the queue is empty. */
  setDefault(responder: FakeResponder): void;
  /** How many queued scripts are left. */
  pending(): number;
  /** Resolves once at least n requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<FakeRequest[]>;
  close(): Promise<void>;
}

export interface FakeOpenAIOptions {
  defaultResponder?: FakeResponder;
}

export function fakeError(
  status: number,
  message = `Fake error ${status}`,
  options: { code?: string; headers?: Record<string, string> } = {},
): FakeHttpError {
  return {
    kind: 'error',
    status,
    headers: options.headers,
    body: { error: { message, type: 'fake_error', param: null, code: options.code ?? null } },
  };
}

export function fakeContextOverflow(): FakeHttpError {
  return fakeError(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
    { code: 'context_length_exceeded' },
  );
}

/** A scriptable OpenAI-compatible server over real HTTP on 127.0.0.1. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: (FakeScript | FakeResponder)[] = [];
  const requests: FakeRequest[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let fallback: FakeResponder = options.defaultResponder ?? (() => 'Fake answer.');
  let callCounter = 0;

  const server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // kept as text
      }
      const path = (req.url ?? '').split('?')[0];
      const request: FakeRequest = { method: req.method ?? '', path, headers: req.headers, body };
      requests.push(request);
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (requests.length >= waiters[i].n) waiters.splice(i, 1)[0].resolve();
      }

      if (req.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(path)) {
        return writeApiError(res, 404, `Fake OpenAI has no route ${req.method} ${path}`, 'not_found');
      }
      if (typeof body !== 'object' || body === null) {
        return writeApiError(res, 400, 'The body is not valid JSON', 'invalid_json');
      }
      const next = queue.shift() ?? fallback;
      const script = typeof next === 'function' ? await next(request) : next;
      if (typeof script === 'object' && script.kind === 'hang') return;
      if (typeof script === 'object' && script.kind === 'error') {
        const errorBody = script.body ?? {
          error: { message: `Fake error ${script.status}`, type: 'fake_error', code: null },
        };
        return writeJson(res, script.status, errorBody, script.headers);
      }
      const answer: FakeAnswer = typeof script === 'string' ? { text: script } : script;
      const toolCalls = (answer.toolCalls ?? []).map((call) => ({
        id: call.id ?? `call_${++callCounter}`,
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      }));
      const usage =
        answer.usage !== undefined
          ? answer.usage
          : {
              prompt_tokens: approxTokens(JSON.stringify((body as { messages?: unknown }).messages ?? '')),
              completion_tokens: approxTokens(
                (answer.reasoning ?? '') + (answer.text ?? '') + toolCalls.map((c) => c.arguments).join(''),
              ),
            };
      await writeChatCompletion(res, body, { ...answer, toolCalls, usage });
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...scripts) => void queue.push(...scripts),
    setDefault: (responder) => void (fallback = responder),
    pending: () => queue.length,
    waitForRequests: (n, timeoutMs = 5000) =>
      new Promise((resolve, reject) => {
        if (requests.length >= n) return resolve(requests.slice());
        const timer = setTimeout(
          () =>
            reject(
              new Error(`Fake OpenAI: waited ${timeoutMs} ms for ${n} requests, got ${requests.length}`),
            ),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(requests.slice());
          },
        });
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
