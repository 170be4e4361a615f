import IORedis, { type Redis } from 'ioredis';
import { conversationEventsKey, type PortalEvent } from '@portal/contracts';

export interface StoredEvent {
  id: string;
  event: PortalEvent;
}

/** XADDs each ARGV after the first (the MINID to trim to) to KEYS[1], in order; returns their ids. */
const APPEND_ALL_SCRIPT = `
local ids = {}
for i = 2, #ARGV do
  ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'e', ARGV[i])
end
return ids`;

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
    // An append waits out a short Redis restart (ioredis's default 20 reconnections, about 10 s)
    // rather than failing at once: the write it follows has committed, and an event that is
    // never appended is one no client following the stream will see.
    // Autopipelining: appends made in the same tick (many turns under load) share one write.
    this.writer = new IORedis(redisUrl, {
      maxRetriesPerRequest: 20,
      lazyConnect: false,
      enableAutoPipelining: true,
    });
  }

  async publish(conversationId: string, event: PortalEvent): Promise<string> {
    const [id] = await this.publishAll(conversationId, [event]);
    return id;
  }

  /**
   * Appends `events` in order in one round trip: commands on one connection run in the order
   * sent, so each lands after the one before it. Several go in one script, so a reader blocked
   * on the stream wakes once for all of them.
   */
  async publishAll(conversationId: string, events: readonly PortalEvent[]): Promise<string[]> {
    const key = conversationEventsKey(this.prefix, conversationId);
    const minId = `${Date.now() - this.retentionMs}-0`;
    const fields = events.map((event) => JSON.stringify(event));
    if (fields.length === 0) return [];
    if (fields.length === 1)
      return [(await this.writer.xadd(key, 'MINID', '~', minId, '*', 'e', fields[0]))!];
    // EVAL, not EVALSHA: a Redis that lost its scripts (a restart) cannot answer NOSCRIPT and
    // have the retry overtaken by the appends sent after it.
    return (await this.writer.eval(APPEND_ALL_SCRIPT, 1, key, minId, ...fields)) as string[];
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

  /**
   * The retained events of one turn, oldest first, read backwards from the newest until its
   * `turn_started` or the stream's start (Redis lost the older ones); null when neither is within
   * `maxScanned` events.
   */
  async turnEvents(
    conversationId: string,
    turnId: string,
    maxScanned = 10_000,
  ): Promise<StoredEvent[] | null> {
    const key = conversationEventsKey(this.prefix, conversationId);
    const found: StoredEvent[] = [];
    let end = '+';
    for (let scanned = 0; scanned < maxScanned;) {
      const rows = await this.writer.xrevrange(key, end, '-', 'COUNT', 500);
      for (const row of rows) {
        const stored = toStoredEvent(row);
        if (!('turnId' in stored.event) || stored.event.turnId !== turnId) continue;
        found.push(stored);
        if (stored.event.type === 'turn_started') return found.reverse();
      }
      if (rows.length < 500) return found.reverse();
      scanned += rows.length;
      end = `(${rows[rows.length - 1][0]}`;
    }
    return null;
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
   * Follows the stream after `afterId` until `signal` aborts, yielding what each read returned
   * (oldest first) at once. Each subscriber holds its own blocking connection, since XREAD BLOCK
   * occupies it.
   */
  async *follow(conversationId: string, afterId: string, signal: AbortSignal): AsyncGenerator<StoredEvent[]> {
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
          const batch = rows.map(toStoredEvent);
          if (!batch.length) continue;
          cursor = batch[batch.length - 1].id;
          yield batch;
        }
      }
    } finally {
      signal.removeEventListener('abort', stop);
      if (reader.status !== 'end') reader.disconnect();
    }
  }

  /** Drops the conversation's stream, retained events included (the conversation was deleted). */
  async remove(conversationId: string): Promise<void> {
    await this.writer.del(conversationEventsKey(this.prefix, conversationId));
  }

  async close(): Promise<void> {
    this.writer.disconnect();
  }
}

function toStoredEvent([id, fields]: [string, string[]]): StoredEvent {
  return { id, event: JSON.parse(fields[1]) as PortalEvent };
}
