import http from 'node:http';
import { ERROR_CODES } from '@portal/domain';
import { E2E_KEYS, type E2EConversation, type E2EPortal, type E2EUser, type FuzzCase } from '@portal/testing';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as text; for an event stream, what arrived before it was closed. */
  text: string;
  /** Set when the request itself failed (socket error, timeout). */
  failure?: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/**
 * Sends `c` as it is (path, headers and body untouched) with node:http; an event stream is read
 * for `streamMs` and closed. An `authorization` header of '' means none at all.
 */
export function sendRaw(
  baseURL: string,
  c: Pick<FuzzCase, 'method' | 'path' | 'headers' | 'body'>,
  options: { apiKey?: string; timeoutMs?: number; streamMs?: number } = {},
): Promise<RawResponse> {
  const url = new URL(baseURL);
  const headers: Record<string, string> = {};
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  for (const [k, v] of Object.entries(c.headers)) {
    if (k.toLowerCase() === 'authorization' && v === '') delete headers.authorization;
    // Non-Latin-1 text goes on the wire as its UTF-8 bytes (node:http refuses it otherwise).
    else headers[k] = Buffer.from(v, 'utf8').toString('latin1');
  }
  const body =
    c.body === undefined ? undefined : Buffer.isBuffer(c.body) ? c.body : Buffer.from(c.body, 'utf8');
  if (body) headers['content-length'] = String(body.length);
  const isStream = /\/events(\?|$)/.test(c.path);
  return new Promise((resolve) => {
    let settled = false;
    const done = (r: RawResponse) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: c.method,
        path: c.path,
        headers,
        // Streams end their socket; keep them off the shared pool.
        agent: isStream ? false : agent,
        timeout: options.timeoutMs ?? 15_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        const finish = () => done({ status: res.statusCode ?? 0, headers: res.headers, text });
        res.on('end', finish);
        res.on('error', finish);
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          setTimeout(() => {
            finish();
            req.destroy();
          }, options.streamMs ?? 150);
        }
      },
    );
    req.on('timeout', () => {
      done({ status: 0, headers: {}, text: '', failure: 'timeout' });
      req.destroy();
    });
    req.on('error', (err) => done({ status: 0, headers: {}, text: '', failure: err.message }));
    req.end(body);
  });
}

export function closeRawAgent(): void {
  agent.destroy();
}

/**
 * What is wrong with an answer, or null: a 5xx, or an error answer whose body is not
 * `{ error: { code, message } }` with a code from the stable list (domain ERROR_CODES). HEAD
 * answers carry no body.
 */
export function errorShapeProblem(method: string, res: RawResponse): string | null {
  if (res.failure) return `request failed: ${res.failure}`;
  if (res.status >= 500) return `HTTP ${res.status}: ${res.text.slice(0, 200)}`;
  if (res.status < 400 || method === 'HEAD') return null;
  let body: { error?: { code?: unknown; message?: unknown } } | null;
  try {
    body = JSON.parse(res.text);
  } catch {
    return `HTTP ${res.status} without a JSON body: ${res.text.slice(0, 120)}`;
  }
  const error = body?.error;
  if (!error || typeof error.code !== 'string' || typeof error.message !== 'string') {
    return `HTTP ${res.status} body is not { error: { code, message } }: ${res.text.slice(0, 120)}`;
  }
  if (!(ERROR_CODES as readonly string[]).includes(error.code)) return `unknown error code ${error.code}`;
  return null;
}

/** The error code of an answer, or `-` when it has none. */
export function codeOf(res: RawResponse): string {
  try {
    return JSON.parse(res.text)?.error?.code ?? '-';
  } catch {
    return '-';
  }
}

/** Uploads `text` as a text attachment of `user` (to `conversationId` when given) and waits until it is read. */
export async function uploadText(
  e2e: E2EPortal,
  user: E2EUser,
  filename: string,
  text: string,
  conversationId?: string,
): Promise<string> {
  const form = new FormData();
  if (conversationId) form.append('conversationId', conversationId);
  form.append('file', new Blob([text]), filename);
  const res = await fetch(`${e2e.portal.baseURL}/v1/attachments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${E2E_KEYS[user]}` },
    body: form,
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`upload ${filename}: ${res.status} ${JSON.stringify(body)}`);
  const api = e2e.api(user);
  let last = '';
  for (let i = 0; i < 200; i++) {
    const manifest = await api.get(`/v1/attachments/${body.id}`);
    if (manifest.body.status === 'finished') return body.id as string;
    if (manifest.body.status === 'failed') throw new Error(`${filename} failed: ${manifest.body.error}`);
    last = `${manifest.status} ${JSON.stringify(manifest.body)}`;
    await new Promise((r) => setTimeout(r, 50));
  }
  // What a rare slow read needs to be understood: the last answer and what the worker logged.
  const logged = e2e.portal.logs['attachment-ingest'].join('').split('\n').slice(-30).join('\n');
  throw new Error(`${filename} was not read in time; last answer: ${last}\ningest log:\n${logged}`);
}

/** Opens a turn on `chat` that pauses on an approval of `deploy`; its id and the request block's id. */
export async function pausedOnApproval(e2e: E2EPortal, chat: E2EConversation, key: string) {
  e2e.model.script(key, { toolCalls: [{ name: 'deploy', arguments: { query: key } }] }, `Done ${key}.`);
  const turnId = await chat.open(`${e2e.model.tag(key)} deploy ${key}`);
  const request = await chat.event(turnId, 'block_finished', (d) => d.block.kind === 'approval_request');
  await chat.event(turnId, 'turn_state', (d) => d.status === 'paused');
  return { turnId, blockId: request.data.block.id as string };
}

/** Lines a service logged at error level or above (JSON lines, the level as a word). */
export function errorLogLines(logs: string[]): string[] {
  return logs
    .join('')
    .split('\n')
    .filter((line) => /"level":"(error|fatal)"/.test(line));
}
