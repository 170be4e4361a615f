import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LOCAL_MODEL } from './catalogue';
import {
  approxTokens,
  readBody,
  writeApiError,
  writeChatCompletion,
  type WireAnswer,
  type WireToolCall,
} from './openai-wire.util';

export interface LocalModelServerOptions {
  /** Wait before each streamed chunk, so clients can see text arrive. Default 0. */
  chunkDelayMs?: number;
  /** Requests whose approximate size passes this fail as a context overflow. */
  contextWindow?: number;
}

export interface LocalModelServer {
  baseURL: string;
  close(): Promise<void>;
}

const TAG = '[portal-local model]';

/**
 * The built-in local model: a deterministic OpenAI-compatible endpoint on 127.0.0.1 so the portal
 * runs end to end without any key. It echoes, calls offered tools when told to
 * ("call tool load_skill fact-check", "use search_attachments query=Q3"), reports tool results,
 * streams reasoning when an effort is sent, and writes titles, reviews and summaries.
 */
export async function startLocalModelServer(
  options: LocalModelServerOptions = {},
): Promise<LocalModelServer> {
  const contextWindow = options.contextWindow ?? LOCAL_MODEL.contextWindow;
  const server = createServer((req, res) => {
    handle(req, res, contextWindow, options.chunkDelayMs ?? 0).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, contextWindow: number, delayMs: number) {
  const path = (req.url ?? '').split('?')[0];
  if (req.method !== 'POST' || !/^(\/v1)?\/chat\/completions$/.test(path)) {
    return writeApiError(res, 404, `No route ${req.method} ${path}`, 'not_found');
  }
  let body: ChatBody;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return writeApiError(res, 400, 'The body is not valid JSON', 'invalid_json');
  }
  if (!Array.isArray(body?.messages))
    return writeApiError(res, 400, '"messages" must be a list', 'invalid_request');

  const promptTokens = countPromptTokens(body);
  if (promptTokens > contextWindow) {
    return writeApiError(
      res,
      400,
      `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ${promptTokens} tokens.`,
      'context_length_exceeded',
    );
  }
  const answer = localAnswer(body);
  const output =
    (answer.reasoning ?? '') +
    (answer.text ?? '') +
    (answer.toolCalls ? JSON.stringify(answer.toolCalls) : '');
  answer.usage = { prompt_tokens: promptTokens, completion_tokens: approxTokens(output) };
  answer.delayMs = delayMs;
  await writeChatCompletion(res, body, answer);
}

// A picture costs a fixed estimate, not the length of its base64 data URL.
const PICTURE_TOKENS = 1000;

function countPromptTokens(body: ChatBody): number {
  let pictures = 0;
  const text = JSON.stringify([body.messages, body.tools ?? []], (key, value) => {
    if (key !== 'image_url') return value;
    pictures++;
    return '';
  });
  return approxTokens(text) + pictures * PICTURE_TOKENS;
}

interface ChatMessage {
  role?: string;
  content?: unknown;
  tool_calls?: { id?: string; function?: { name?: string; arguments?: string } }[];
  tool_call_id?: string;
}

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  minimum?: number;
}

interface ChatBody {
  model?: string;
  messages: ChatMessage[];
  tools?: { type?: string; function?: { name?: string; parameters?: JsonSchema } }[];
  reasoning_effort?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
}

/** The deterministic answer for a request body. */
export function localAnswer(body: ChatBody): WireAnswer {
  const messages = body.messages;
  const tools = (body.tools ?? []).flatMap((t) =>
    t.function?.name ? [{ name: t.function.name, schema: t.function.parameters ?? {} }] : [],
  );
  const instructions = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => textOf(m.content))
    .join('\n');
  const users = messages.filter((m) => m.role === 'user');
  const lastUser = users.at(-1);
  const lastText = lastUser ? textOf(lastUser.content) : '';
  const asked = `${instructions}\n${lastText}`;

  let answer: WireAnswer;
  let plan: string;
  if (tools.length === 0 && /\bPASS\b/.test(asked) && /\bBLOCK\b/.test(asked)) {
    answer = { text: 'PASS' };
    plan = 'pass the text under review';
  } else if (tools.length === 0 && /\btitle\b/i.test(asked)) {
    answer = { text: `Local chat: ${cut(textOf(users[0]?.content), 40)}` };
    plan = 'name the conversation';
  } else if (tools.length === 0 && /summari[sz]|summary/i.test(asked)) {
    answer = { text: summaryOf(messages) };
    plan = 'write a summary';
  } else if (messages.at(-1)?.role === 'tool') {
    answer = { text: toolResultAnswer(messages) };
    plan = 'report the tool result';
  } else {
    const calls = askedToolCalls(lastText, tools, messages);
    if (calls.length > 0) {
      const names = calls.map((c) => c.name).join(', ');
      answer = { text: `${TAG} Calling ${names}.`, toolCalls: calls };
      plan = `call ${names}`;
    } else {
      answer = { text: echo(lastUser) };
      plan = 'echo the message';
    }
  }
  const effort = body.reasoning_effort;
  if (typeof effort === 'string' && effort !== 'none') {
    answer.reasoning = `${TAG} Thinking at ${effort} effort about "${cut(lastText, 80)}": I will ${plan}.`;
  }
  return answer;
}

function echo(message: ChatMessage | undefined): string {
  if (!message) return `${TAG} Hello. I am the built-in local model; I echo what you send.`;
  const pictures = Array.isArray(message.content)
    ? message.content.filter((p) => (p as { type?: string })?.type === 'image_url').length
    : 0;
  const withPictures = pictures > 0 ? ` (with ${pictures} picture${pictures > 1 ? 's' : ''})` : '';
  return `${TAG} Echo of your message${withPictures}: "${cut(textOf(message.content), 200)}"`;
}

function toolResultAnswer(messages: ChatMessage[]): string {
  const results: ChatMessage[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i].role === 'tool'; i--) results.unshift(messages[i]);
  const names = new Map<string, string>();
  for (const m of messages)
    for (const c of m.tool_calls ?? []) if (c.id) names.set(c.id, c.function?.name ?? '');
  const parts = results.map(
    (r) => `the tool ${names.get(r.tool_call_id ?? '') || 'call'} answered: "${cut(textOf(r.content), 200)}"`,
  );
  return `${TAG} ${capitalise(parts.join('; '))}.`;
}

function summaryOf(messages: ChatMessage[]): string {
  const all = messages.map((m) => textOf(m.content)).join('\n');
  const covered = [...all.matchAll(/turns?\s+1\s*[–-]\s*(\d+)/gi)].map((m) => Number(m[1]));
  const last =
    covered.length > 0 ? Math.max(...covered) : Math.max(1, messages.filter((m) => m.role === 'user').length);
  const requests = messages
    .filter((m) => m.role === 'user')
    .map((m) => `- "${cut(textOf(m.content), 300)}"`)
    .join('\n');
  const work = messages
    .flatMap((m) => m.tool_calls ?? [])
    .map((c) => `- ${c.function?.name ?? 'tool'} ${cut(c.function?.arguments ?? '', 120)}`)
    .join('\n');
  return [
    `Summary of turns 1–${last} (written by the built-in local model)`,
    `## Requests\n${requests || '- none'}`,
    '## Decisions\n- none recorded',
    `## Work done\n${work || '- none'}`,
    '## Open work\n- none recorded',
    '## Facts\n- none recorded',
  ].join('\n\n');
}

function askedToolCalls(
  text: string,
  tools: { name: string; schema: JsonSchema }[],
  messages: ChatMessage[],
): WireToolCall[] {
  const found: { name: string; schema: JsonSchema; start: number; end: number }[] = [];
  for (const tool of tools) {
    const name = escapeRegExp(tool.name).replace(/_/g, '[_ ]');
    const pattern = new RegExp(
      `\\b(?:call(?:\\s+tool)?|use)\\s+(?:the\\s+)?(?:tool\\s+)?${name}(?![\\w-])`,
      'gi',
    );
    for (const m of text.matchAll(pattern))
      found.push({ ...tool, start: m.index, end: m.index + m[0].length });
  }
  found.sort((a, b) => a.start - b.start);
  const earlier = messages.reduce((n, m) => n + (m.tool_calls?.length ?? 0), 0);
  return found.map((f, i) => ({
    id: `call_local_${earlier + i + 1}`,
    name: f.name,
    arguments: JSON.stringify(argumentsFor(text.slice(f.end, found[i + 1]?.start ?? text.length), f.schema)),
  }));
}

/** `key=value` pairs first, then the remaining words for the first required string, then defaults. */
export function argumentsFor(segment: string, schema: JsonSchema): Record<string, unknown> {
  const props = schema.properties ?? {};
  const args: Record<string, unknown> = {};
  const rest = segment.replace(/(\w+)=(?:"([^"]*)"|'([^']*)'|(\S+))/g, (whole, key: string, d, s, bare) => {
    if (!(key in props)) return whole;
    args[key] = coerce(String(d ?? s ?? bare), props[key]);
    return ' ';
  });
  const free = rest
    .trim()
    .replace(/^(?:with|:|,)\s*/i, '')
    .replace(/\s*\b(?:and|then)$/i, '')
    .replace(/[.!?]+$/, '')
    .trim();
  for (const key of schema.required ?? []) {
    if (key in args) continue;
    const prop = props[key] ?? {};
    if (free && typeOf(prop) === 'string' && !prop.enum && !Object.values(args).includes(free)) {
      args[key] = free;
    } else {
      args[key] = defaultFor(prop);
    }
  }
  return args;
}

function coerce(value: string, prop: JsonSchema): unknown {
  const type = typeOf(prop);
  if ((type === 'number' || type === 'integer') && Number.isFinite(Number(value))) return Number(value);
  if (type === 'boolean') return value === 'true';
  if (type === 'array') return value.split(',').filter(Boolean);
  return value;
}

function defaultFor(prop: JsonSchema): unknown {
  if (prop.enum && prop.enum.length > 0) return prop.enum[0];
  switch (typeOf(prop)) {
    case 'number':
    case 'integer':
      return prop.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return {};
    default:
      return 'example';
  }
}

function typeOf(prop: JsonSchema): string {
  return (Array.isArray(prop.type) ? prop.type.find((t) => t !== 'null') : prop.type) ?? 'string';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) =>
      (part as { type?: string }).type === 'text' ? String((part as { text?: unknown }).text ?? '') : '',
    )
    .filter(Boolean)
    .join('\n');
}

function cut(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
