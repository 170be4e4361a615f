import IORedis, { type Redis } from 'ioredis';
import { conversationEventsKey, type PortalEvent } from '@portal/contracts';
import { inSpan, SpanKind, SPAN, traceparent } from '@portal/observability';

export interface StoredEvent {
  id: string;
  event: PortalEvent;
  /** The W3C traceparent of the span that published it, while tracing is on. */
  trace?: string;
}

/**
 * XADDs each ARGV after the second to KEYS[1], in order, with ARGV[2] (when not empty) as its
 * traceparent; ARGV[1] is the MINID to trim to. Returns their ids.
 */
const APPEND_ALL_SCRIPT = `
local ids = {}
for i = 3, #ARGV do
  if ARGV[2] == '' then
    ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'e', ARGV[i])
  else
    ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[1], '*', 'e', ARGV[i], 't', ARGV[2])
  end
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
    if (events.length === 0) return [];
    const attributes = {
      'portal.conversation_id': conversationId,
      'portal.events.types': events.map((event) => event.type),
    };
    return inSpan(
      SPAN.eventsPublish,
      attributes,
      () => this.append(conversationId, events),
      SpanKind.PRODUCER,
    );
  }

  /** Each event carries the publishing span's traceparent, so the gateway's SSE send links to it. */
  private async append(conversationId: string, events: readonly PortalEvent[]): Promise<string[]> {
    const key = conversationEventsKey(this.prefix, conversationId);
    const minId = `${Date.now() - this.retentionMs}-0`;
    const fields = events.map((event) => JSON.stringify(event));
    const trace = traceparent();
    if (fields.length === 1) {
      const traced = trace ? ['t', trace] : [];
      return [(await this.writer.xadd(key, 'MINID', '~', minId, '*', 'e', fields[0], ...traced))!];
    }
    // EVAL, not EVALSHA: a Redis that lost its scripts (a restart) cannot answer NOSCRIPT and
    // have the retry overtaken by the appends sent after it.
    return (await this.writer.eval(APPEND_ALL_SCRIPT, 1, key, minId, trace ?? '', ...fields)) as string[];
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

  async close(): Promise<void> {
    this.writer.disconnect();
  }
}

function toStoredEvent([id, fields]: [string, string[]]): StoredEvent {
  const event = JSON.parse(fields[1]) as PortalEvent;
  return fields[2] === 't' ? { id, event, trace: fields[3] } : { id, event };
}
