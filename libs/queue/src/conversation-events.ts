import IORedis, { type Redis } from 'ioredis';
import { conversationEventsKey, type PortalEvent } from '@portal/contracts';

export interface StoredEvent {
  id: string;
  event: PortalEvent;
}

/**
 * A conversation's events as a Redis stream: workers append, the gateway reads. The stream id is the
 * SSE event id, so a client reconnecting with `Last-Event-ID` reads exactly what it missed.
 * Events older than the retention are trimmed on every append.
 */
export class ConversationEvents {
  private readonly writer: Redis;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
    private readonly retentionMs = 24 * 60 * 60 * 1000,
  ) {
    this.writer = new IORedis(redisUrl, { maxRetriesPerRequest: 3, lazyConnect: false });
  }

  async publish(conversationId: string, event: PortalEvent): Promise<string> {
    const minId = `${Date.now() - this.retentionMs}-0`;
    const id = await this.writer.xadd(
      conversationEventsKey(this.prefix, conversationId),
      'MINID',
      '~',
      minId,
      '*',
      'e',
      JSON.stringify(event),
    );
    return id as string;
  }

  /** Everything retained after `afterId` (exclusive), oldest first. */
  async readAfter(conversationId: string, afterId: string, count = 1000): Promise<StoredEvent[]> {
    const rows = await this.writer.xrange(
      conversationEventsKey(this.prefix, conversationId),
      `(${afterId}`,
      '+',
      'COUNT',
      count,
    );
    return rows.map(toStoredEvent);
  }

  /** The id of the newest event, or `0-0`: a subscription without `Last-Event-ID` starts after it. */
  async lastId(conversationId: string): Promise<string> {
    const rows = await this.writer.xrevrange(
      conversationEventsKey(this.prefix, conversationId),
      '+',
      '-',
      'COUNT',
      1,
    );
    return rows[0]?.[0] ?? '0-0';
  }

  /**
   * Follows the stream after `afterId` until `signal` aborts. Each subscriber holds its own
   * blocking connection, since XREAD BLOCK occupies it.
   */
  async *follow(conversationId: string, afterId: string, signal: AbortSignal): AsyncGenerator<StoredEvent> {
    const reader = new IORedis(this.redisUrl, { maxRetriesPerRequest: null });
    const key = conversationEventsKey(this.prefix, conversationId);
    const stop = () => reader.disconnect();
    signal.addEventListener('abort', stop, { once: true });
    let cursor = afterId;
    try {
      while (!signal.aborted) {
        const result = await reader
          .xread('COUNT', 500, 'BLOCK', 5000, 'STREAMS', key, cursor)
          .catch((err) => {
            if (signal.aborted) return null;
            throw err;
          });
        for (const [, rows] of result ?? []) {
          for (const row of rows) {
            const stored = toStoredEvent(row);
            cursor = stored.id;
            yield stored;
          }
        }
      }
    } finally {
      signal.removeEventListener('abort', stop);
      if (reader.status !== 'end') reader.disconnect();
    }
  }

  async close(): Promise<void> {
    this.writer.disconnect();
  }
}

function toStoredEvent([id, fields]: [string, string[]]): StoredEvent {
  return { id, event: JSON.parse(fields[1]) as PortalEvent };
}
