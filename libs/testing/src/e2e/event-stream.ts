import http from 'node:http';
import { portalSseParser, type SseEvent } from './api.client';

/**
 * A live subscription to a conversation's Server-Sent Events, kept open across turns: every event
 * is collected in `events`, and tests wait for the one they need instead of sleeping.
 */
export interface EventSubscription {
  /** HTTP status of the answer (200, or the error's status). */
  status: number;
  /** The error body when the status is not 200. */
  errorBody: unknown;
  /** Every event received so far, in order. */
  readonly events: SseEvent[];
  /** The newest event's id, for a reconnect with `Last-Event-ID`. */
  lastId(): string | undefined;
  /**
   * Resolves with the first event at index `from` or later (default 0) that `test` accepts; rejects
   * when the timeout passes or the stream ends first.
   */
  waitFor(
    test: (event: SseEvent) => boolean,
    opts?: { from?: number; timeoutMs?: number },
  ): Promise<SseEvent>;
  /** Every event of one turn received so far. */
  ofTurn(turnId: string): SseEvent[];
  /** Resolves once the stream has ended (closed by either side). */
  readonly ended: Promise<void>;
  close(): void;
}

/**
 * Opens `GET <url>` as an SSE stream and resolves once the response headers have arrived (the
 * gateway sends them at once), so a message posted afterwards is certainly seen. Each subscription
 * has its own socket: fetch's pool may keep a connection around after an abort.
 */
export async function subscribeEvents(
  url: string,
  apiKey: string,
  options: { lastEventId?: string } = {},
): Promise<EventSubscription> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const req = http.get(url, { agent: false, headers });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  res.setEncoding('utf8');

  const events: SseEvent[] = [];
  const waiters = new Set<() => void>();
  const notify = () => waiters.forEach((w) => w());
  let done = false;
  let errorBody: unknown = null;
  const ended = new Promise<void>((resolve) => {
    const finish = () => {
      if (done) return;
      done = true;
      notify();
      resolve();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
    req.on('error', finish);
  });

  if (res.statusCode !== 200) {
    let text = '';
    res.on('data', (chunk: string) => (text += chunk));
    await ended;
    try {
      errorBody = JSON.parse(text);
    } catch {
      errorBody = text;
    }
  } else {
    const parser = portalSseParser((event) => events.push(event));
    res.on('data', (chunk: string) => {
      const before = events.length;
      parser.feed(chunk);
      if (events.length > before) notify();
    });
  }

  const waitFor: EventSubscription['waitFor'] = (test, { from = 0, timeoutMs = 15_000 } = {}) =>
    new Promise((resolve, reject) => {
      let index = from;
      const check = () => {
        for (; index < events.length; index++) {
          if (test(events[index])) {
            cleanup();
            return resolve(events[index]);
          }
        }
        if (done) {
          cleanup();
          reject(new Error(`SSE ${url}: the stream ended after ${events.length} events`));
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        const seen = events.map((e) => e.data?.type).join(', ');
        reject(new Error(`SSE ${url}: waited ${timeoutMs} ms; events so far: ${seen}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  return {
    status: res.statusCode ?? 0,
    errorBody,
    events,
    lastId: () => events.at(-1)?.id,
    waitFor,
    ofTurn: (turnId) => events.filter((e) => e.data?.turnId === turnId),
    ended,
    close: () => req.destroy(),
  };
}
