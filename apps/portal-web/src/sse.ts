/**
 * Server-Sent Events over `fetch`: EventSource cannot send the Authorization header an API key
 * needs (a browser session's cookie it could), so the stream is read here, parsed by
 * eventsource-parser, and reconnects itself with `Last-Event-ID`.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface EventStreamOptions {
  url: string;
  /** The API key's header; null with a browser session, whose cookie the browser sends itself. */
  authorization: string | null;
  /** Replay what came after this id (a reload in the middle of a turn). */
  lastEventId?: string;
  onEvent(id: string, data: unknown): void;
  /** Each time the server answered and the stream is open (headers arrive at once). */
  onOpen?(): void;
  /** The connection was lost or could not be made; it is being tried again. */
  onDown?(): void;
  /** The server refused the stream for good (401, 404): no more reconnections. */
  onFatal?(status: number): void;
}

/** Without a byte for this long (the gateway sends a heartbeat every 15 s), the stream is dead. */
const SILENCE_MS = 40_000;
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

export class EventStream {
  private closed = false;
  private controller: AbortController | null = null;
  private lastId: string | undefined;
  private wake: (() => void) | null = null;
  private readonly onOnline = () => {
    this.wake?.();
    this.controller?.abort();
  };
  private readonly onOffline = () => this.controller?.abort();

  constructor(private readonly options: EventStreamOptions) {
    this.lastId = options.lastEventId;
  }

  /** The id of the last event delivered. */
  get lastEventId(): string | undefined {
    return this.lastId;
  }

  start(): void {
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    void this.run();
  }

  close(): void {
    this.closed = true;
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    this.controller?.abort();
    this.wake?.();
  }

  private async run(): Promise<void> {
    let delay = RETRY_MIN_MS;
    while (!this.closed) {
      const status = await this.connect().catch(() => 0);
      if (this.closed) return;
      if (status === 401 || status === 403 || status === 404) {
        this.options.onFatal?.(status);
        return;
      }
      if (status === 200) delay = RETRY_MIN_MS;
      this.options.onDown?.();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
      delay = Math.min(RETRY_MAX_MS, delay * 2);
    }
  }

  /** One connection, until it ends. Resolves with the HTTP status (200 once it delivered). */
  private async connect(): Promise<number> {
    const controller = new AbortController();
    this.controller = controller;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.options.authorization) headers['authorization'] = this.options.authorization;
    if (this.lastId) headers['last-event-id'] = this.lastId;
    let silence = setTimeout(() => controller.abort(), SILENCE_MS);
    try {
      const res = await fetch(this.options.url, { headers, signal: controller.signal, cache: 'no-store' });
      if (!res.ok || !res.body) return res.status;
      this.options.onOpen?.();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = createParser({ onEvent: (message) => this.deliver(message) });
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), SILENCE_MS);
        parser.feed(decoder.decode(value, { stream: true }));
      }
      return 200;
    } finally {
      clearTimeout(silence);
      controller.abort();
    }
  }

  private deliver(message: EventSourceMessage): void {
    if (message.id === undefined || this.closed) return;
    let data: unknown;
    try {
      data = JSON.parse(message.data);
    } catch {
      return;
    }
    this.lastId = message.id;
    try {
      this.options.onEvent(message.id, data);
    } catch (err) {
      // A fault in drawing one event must not cost the connection (and a replay loop).
      console.error('event', message.id, err);
    }
  }
}
