import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AgentMcpServer } from '@portal/dal';
import { isAllowedToolUrl } from '../http.tool';

export interface McpReach {
  /** PORTAL_TOOL_URL_ALLOW prefixes. */
  allow: readonly string[];
  timeoutMs: number;
  /** The cap on each HTTP response the server sends. */
  maxResponseBytes: number;
  env: Readonly<Record<string, string | undefined>>;
}

/** Why a server did not answer; the message names the server, never a header's value. */
export class McpServerError extends Error {
  override name = 'McpServerError';
}

/**
 * Connects to the server (streamable HTTP), runs `use` and closes, all within `reach.timeoutMs`.
 * Checks the URL against the allow-list first and sends the `headersFromEnv` headers; a response
 * past the size cap, a timeout or any transport failure rejects with McpServerError. An abort
 * of `signal` (the turn's) rejects with its reason.
 */
export async function withMcpClient<T>(
  server: AgentMcpServer,
  reach: McpReach,
  signal: AbortSignal,
  use: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<T> {
  const fail = (why: string) => new McpServerError(`MCP server ${server.name}: ${why}`);
  if (!isAllowedToolUrl(server.url, reach.allow)) {
    throw fail(`${server.url} is not allowed (not in PORTAL_TOOL_URL_ALLOW)`);
  }
  const headers: Record<string, string> = {};
  for (const [header, envVar] of Object.entries(server.headersFromEnv ?? {})) {
    const value = reach.env[envVar];
    if (value === undefined || value === '') throw fail(`the env var ${envVar} for ${header} is not set`);
    headers[header] = value;
  }
  const limit = new AbortController();
  let why: string | null = null;
  const stop = (reason: string) => {
    why ??= reason;
    limit.abort();
  };
  const timer = setTimeout(() => stop(`no answer within ${reach.timeoutMs} ms`), reach.timeoutMs);
  const both = AbortSignal.any([signal, limit.signal]);
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers },
    fetch: async (url, init) =>
      capped(await fetch(url, { ...init, redirect: 'manual' }), reach.maxResponseBytes, () =>
        stop(`the response was larger than ${reach.maxResponseBytes} bytes`),
      ),
  });
  const client = new Client({ name: 'portal-turn-orchestrator', version: '1' });
  const options = { signal: both, timeout: reach.timeoutMs };
  try {
    await client.connect(transport, options);
    return await use(client, options);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw fail(why ?? (err as Error).message);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => undefined);
  }
}

/** The response with a body that calls `over` and errors once it passes `maxBytes`. */
function capped(res: Response, maxBytes: number, over: () => void): Response {
  if (!res.body) return res;
  let size = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        over();
        controller.error(new Error('response too large'));
      } else controller.enqueue(chunk);
    },
  });
  return new Response(res.body.pipeThrough(counter), {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}
