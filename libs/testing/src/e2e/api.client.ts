import { createParser } from 'eventsource-parser';

/** A small HTTP client for end-to-end tests: JSON in, `{ status, body }` out. */
export class ApiClient {
  constructor(
    readonly baseURL: string,
    readonly apiKey?: string,
  ) {}

  as(apiKey: string): ApiClient {
    return new ApiClient(this.baseURL, apiKey);
  }

  async request<T = any>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const headers: Record<string, string> = {};
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(this.baseURL + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }

  get<T = any>(path: string) {
    return this.request<T>('GET', path);
  }

  post<T = any>(path: string, body?: unknown) {
    return this.request<T>('POST', path, body ?? {});
  }

  patch<T = any>(path: string, body: unknown) {
    return this.request<T>('PATCH', path, body);
  }
}

export interface SseEvent {
  id: string;
  data: any;
}

/**
 * The portal's event stream parsed by eventsource-parser: `onEvent` gets each event that has an id,
 * its data read as JSON. Feed it the text as it arrives.
 */
export function portalSseParser(onEvent: (event: SseEvent) => void): { feed(chunk: string): void } {
  return createParser({
    onEvent: ({ id, data }) => {
      if (id !== undefined) onEvent({ id, data: JSON.parse(data) });
    },
  });
}

/**
 * Reads a conversation's SSE stream until `until` returns true for the events so far (or the
 * timeout passes), then closes it.
 */
export async function readEvents(
  url: string,
  apiKey: string,
  until: (events: SseEvent[]) => boolean,
  options: { lastEventId?: string; timeoutMs?: number } = {},
): Promise<SseEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 20_000);
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const events: SseEvent[] = [];
  try {
    const res = await fetch(url, { headers, signal: controller.signal });
    if (!res.ok || !res.body) throw new Error(`SSE ${url} answered ${res.status}`);
    const decoder = new TextDecoder();
    const parser = portalSseParser((event) => events.push(event));
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (until(events)) break;
    }
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}
