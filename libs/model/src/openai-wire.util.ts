import type { IncomingMessage, ServerResponse } from 'node:http';

/** Server side of the OpenAI Chat Completions wire format, shared by the local model and test fakes. */

export interface WireToolCall {
  id: string;
  name: string;
  /** Sent as is, so it may be malformed JSON. */
  arguments: string;
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
}

export interface WireAnswer {
  text?: string;
  reasoning?: string;
  reasoningField?: 'reasoning_content' | 'reasoning';
  toolCalls?: WireToolCall[];
  /** null: no usage at all. */
  usage?: WireUsage | null;
  /** Defaults to `tool_calls` with tool calls, else `stop`; null: none is sent. */
  finishReason?: string | null;
  /** Characters per streamed fragment; default: word by word (arguments in 12-character pieces). */
  chunkSize?: number;
  /** Wait before each streamed chunk. */
  delayMs?: number;
  /** Destroy the socket after this many chunks (0: before any answer). */
  breakAfterChunks?: number;
}

/** The parts of a request body the writer looks at. */
export interface WireRequest {
  model?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
}

let responseCounter = 0;

export async function writeChatCompletion(
  res: ServerResponse,
  request: WireRequest,
  answer: WireAnswer,
): Promise<void> {
  const id = `chatcmpl-${++responseCounter}`;
  const created = Math.floor(Date.now() / 1000);
  const model = typeof request.model === 'string' ? request.model : 'unknown';
  const toolCalls = answer.toolCalls ?? [];
  const finishReason =
    answer.finishReason === undefined ? (toolCalls.length > 0 ? 'tool_calls' : 'stop') : answer.finishReason;
  const usage = answer.usage
    ? {
        prompt_tokens: answer.usage.prompt_tokens,
        completion_tokens: answer.usage.completion_tokens,
        total_tokens: answer.usage.prompt_tokens + answer.usage.completion_tokens,
        prompt_tokens_details: { cached_tokens: answer.usage.cached_tokens ?? 0 },
      }
    : undefined;
  const reasoningField = answer.reasoningField ?? 'reasoning_content';

  if (!request.stream) {
    if (answer.breakAfterChunks !== undefined) return void res.socket?.destroy();
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: answer.text ?? null,
      refusal: null,
    };
    if (answer.reasoning) message[reasoningField] = answer.reasoning;
    if (toolCalls.length > 0) {
      message['tool_calls'] = toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      }));
    }
    writeJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model,
      choices: [{ index: 0, message, finish_reason: finishReason, logprobs: null }],
      ...(usage ? { usage } : {}),
    });
    return;
  }

  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  res.flushHeaders();
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });

  const chunks: unknown[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of split(answer.reasoning ?? '', answer.chunkSize))
    chunks.push(chunk({ [reasoningField]: piece }));
  for (const piece of split(answer.text ?? '', answer.chunkSize)) chunks.push(chunk({ content: piece }));
  toolCalls.forEach((call, index) => {
    chunks.push(
      chunk({
        tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      }),
    );
    for (const piece of split(call.arguments, answer.chunkSize ?? 12)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, finishReason));
  if (usage && request.stream_options?.include_usage) {
    chunks.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
  }

  let sent = 0;
  for (const data of chunks) {
    if (answer.breakAfterChunks !== undefined && sent >= answer.breakAfterChunks) {
      res.socket?.destroy();
      return;
    }
    if (answer.delayMs) await sleep(answer.delayMs);
    if (res.destroyed) return;
    // Waiting for each write lets a broken stream deliver what it sent before the socket goes.
    await new Promise<void>((resolve) => res.write(`data: ${JSON.stringify(data)}\n\n`, () => resolve()));
    sent++;
  }
  res.end('data: [DONE]\n\n');
}

export function writeJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

/** An error in the shape the OpenAI API (and so the SDK) uses. */
export function writeApiError(
  res: ServerResponse,
  status: number,
  message: string,
  code: string | null = null,
  headers: Record<string, string> = {},
): void {
  writeJson(res, status, { error: { message, type: 'invalid_request_error', param: null, code } }, headers);
}

export async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

/** Rough token count used by the local and fake servers: four characters a token. */
export function approxTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function split(text: string, size: number | undefined): string[] {
  if (text === '') return [];
  if (!size) return text.match(/\S+\s*|\s+/g) ?? [text];
  const points = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < points.length; i += size) pieces.push(points.slice(i, i + size).join(''));
  return pieces;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
