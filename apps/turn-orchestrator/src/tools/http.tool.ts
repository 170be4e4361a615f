import type { AgentTool } from '@portal/dal';
import { error, ok, type ToolArgs, type ToolContext, type ToolExecutor, type ToolRun } from './tool.types';

export interface HttpToolOptions {
  /** PORTAL_TOOL_URL_ALLOW prefixes. */
  allow: readonly string[];
  timeoutMs: number;
  maxResponseBytes: number;
}

/**
 * Whether `url` starts with one of the allowed prefixes, compared as URLs: same scheme and host,
 * path under the prefix's, no credentials. So `https://api.example.com` does not let
 * `https://api.example.com.evil.org` through.
 */
export function isAllowedToolUrl(url: string, allow: readonly string[]): boolean {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return false;
  }
  if (target.username || target.password) return false;
  return allow.some((prefix) => {
    const p = new URL(prefix);
    return p.protocol === target.protocol && p.host === target.host && target.pathname.startsWith(p.pathname);
  });
}

/**
 * An agent's HTTP tool: POSTs the arguments as JSON to the declared URL and returns the response
 * body. Refuses URLs outside the allow-list, never follows a redirect, gives up after the timeout
 * and past the size cap; a non-2xx status is an `error` result naming it.
 */
export class HttpTool implements ToolExecutor {
  constructor(
    private readonly spec: AgentTool,
    private readonly options: HttpToolOptions,
  ) {}

  async run(args: ToolArgs, ctx: ToolContext): Promise<ToolRun> {
    const { url } = this.spec;
    if (!isAllowedToolUrl(url, this.options.allow)) {
      return error(
        `The tool ${this.spec.name} is not allowed to call ${url} (not in PORTAL_TOOL_URL_ALLOW).`,
      );
    }
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.options.timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timeout.signal]);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/plain, */*' },
        body: JSON.stringify(args),
        redirect: 'manual',
        signal,
      });
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        return error(
          `${this.spec.name}: HTTP ${res.status} redirect to ${res.headers.get('location') ?? '(no location)'} not followed.`,
        );
      }
      const body = await readCapped(res, this.options.maxResponseBytes);
      if (body === null) {
        return error(
          `${this.spec.name}: the response was larger than ${this.options.maxResponseBytes} bytes.`,
        );
      }
      if (!res.ok) return error(`${this.spec.name}: HTTP ${res.status}${body ? `: ${body}` : ''}`);
      return ok(body);
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      if (timeout.signal.aborted) {
        return error(`${this.spec.name}: no response within ${this.options.timeoutMs} ms.`);
      }
      return error(`${this.spec.name}: the request failed (${(err as Error).message}).`);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The body as text, or null once it passes `maxBytes` (the rest is not read). */
async function readCapped(res: Response, maxBytes: number): Promise<string | null> {
  if (!res.body) return '';
  const declared = Number(res.headers.get('content-length'));
  if (declared > maxBytes) {
    await res.body.cancel();
    return null;
  }
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    size += part.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(part.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
