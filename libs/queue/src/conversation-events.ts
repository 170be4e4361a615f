import type { RedisClient, RedisConnections } from '@portal/redis';
import { conversationEventsChannel, conversationEventsKey, type PortalEvent } from '@portal/contracts';
import { inSpan, SpanKind, SPAN, traceparent } from '@portal/observability';

export interface StoredEvent {
  id: string;
  event: PortalEvent;
  /** The W3C traceparent of the span that published it, while tracing is on. */
  trace?: string;
}

/**
 * XADDs each ARGV after the third to KEYS[1] in order (trimming to the MINID in ARGV[2]), with
 * ARGV[3] (when not empty) as its traceparent, then announces the newest id on the channel
 * ARGV[1]; returns the ids.
 */
const APPEND_ALL_SCRIPT = `
local ids = {}
for i = 4, #ARGV do
  if ARGV[3] == '' then
    ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', 'e', ARGV[i])
  else
    ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', 'e', ARGV[i], 't', ARGV[3])
  end
end
redis.call('PUBLISH', ARGV[1], ids[#ids])
return ids`;

/**
 * A conversation's events as a Redis stream: workers append, the gateway reads. The stream id is the
 * SSE event id, so a client reconnecting with `Last-Event-ID` reads exactly what it missed.
 * Events older than the retention are trimmed on every append.
 */
export class ConversationEvents {
  private readonly writer: RedisClient;

  constructor(
    connections: RedisConnections,
    private readonly prefix: string,
    private readonly retentionMs = 24 * 60 * 60 * 1000,
  ) {
    this.writer = connections.shared('events');
  }

  async publish(conversationId: string, event: PortalEvent): Promise<string> {
    const [id] = await this.publishAll(conversationId, [event]);
    return id;
  }

  /**
   * Appends `events` in order in one round trip: commands on one connection run in the order
   * sent, so each lands after the one before it. They go in one script with the announcement, so
   * a reader is told once for all of them and never before they are stored.
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
    const channel = conversationEventsChannel(this.prefix, conversationId);
    const minId = `${Date.now() - this.retentionMs}-0`;
    const fields = events.map((event) => JSON.stringify(event));
    // EVAL, not EVALSHA: a Redis that lost its scripts (a restart) cannot answer NOSCRIPT and
    // have the retry overtaken by the appends sent after it.
    const trace = traceparent() ?? '';
    return (await this.writer.eval(APPEND_ALL_SCRIPT, 1, key, channel, minId, trace, ...fields)) as string[];
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

  /** Drops the conversation's stream, retained events included (the conversation was deleted). */
  async remove(conversationId: string): Promise<void> {
    await this.writer.del(conversationEventsKey(this.prefix, conversationId));
  }
}

export function toStoredEvent([id, fields]: [string, string[]]): StoredEvent {
  const event = JSON.parse(fields[1]) as PortalEvent;
  return fields[2] === 't' ? { id, event, trace: fields[3] } : { id, event };
}
