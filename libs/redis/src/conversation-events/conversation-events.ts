import type { ConversationId, TurnId } from '@portal/domain';
import type { RedisClient, RedisConnections } from '../redis-connections';
import { conversationEventsChannel, conversationEventsKey, type PortalEvent } from '@portal/contracts';
import { inSpan, SpanKind, SPAN, traceparent } from '@portal/observability';

export interface StoredEvent {
  id: string;
  event: PortalEvent;
  /** The W3C traceparent of the span that published it, while tracing is on. */
  trace?: string;
}

/**
 * XADDs each ARGV after the fourth to KEYS[1] in order (trimming to the MINID in ARGV[2]), with
 * ARGV[3] (when not empty) as its traceparent, then announces them on the channel ARGV[1]: with
 * the events themselves when they take at most ARGV[4] bytes, else with the newest id only (see
 * `parseAnnouncement`). Returns the ids.
 */
const APPEND_ALL_SCRIPT = `
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local parts = { newest[1] and newest[1][1] or '0-0', ARGV[3] }
local ids = {}
local size = 0
for i = 6, #ARGV do
  local id
  if ARGV[3] == '' then
    id = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', 'e', ARGV[i])
  else
    id = redis.call('XADD', KEYS[1], 'MINID', '~', ARGV[2], '*', 'e', ARGV[i], 't', ARGV[3])
  end
  ids[#ids + 1] = id
  parts[#parts + 1] = id
  parts[#parts + 1] = ARGV[i]
  size = size + #ARGV[i]
end
-- A conversation left alone past the retention has nothing left to replay: its stream goes too.
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if size <= tonumber(ARGV[4]) then
  redis.call('PUBLISH', ARGV[1], table.concat(parts, '\\n'))
else
  redis.call('PUBLISH', ARGV[1], ids[#ids])
end
return ids`;

/**
 * Events up to this size in all ride in their announcement, so a reader that has everything
 * before them needs no XRANGE; larger batches are announced by their newest id and read.
 */
const INLINE_MAX_BYTES = 64 * 1024;

interface QueuedAppend {
  events: readonly PortalEvent[];
  trace: string;
  resolve(ids: string[]): void;
  reject(err: unknown): void;
}

interface Outbox {
  queue: QueuedAppend[];
  /** A flush is scheduled or an append in flight: what is queued now goes with the next one. */
  busy: boolean;
  /** Only lingering appends are queued: the timer that sends them (`publishWithNext`). */
  lingering: NodeJS.Timeout | null;
}

/** What an append's announcement tells a reader. */
export interface Announcement {
  newestId: string;
  /** The appended events and the id of the stream's newest entry before them, when they fit. */
  inline?: { after: string; events: StoredEvent[] };
}

/**
 * Reads an announcement: the newest id alone, or lines of the id before the batch, the batch's
 * traceparent (or an empty line), then each event's id and JSON (JSON text holds no raw newline).
 */
export function parseAnnouncement(message: string): Announcement {
  if (!message.includes('\n')) return { newestId: message };
  const lines = message.split('\n');
  const trace = lines[1];
  const events: StoredEvent[] = [];
  for (let i = 2; i + 1 < lines.length; i += 2) {
    const event = JSON.parse(lines[i + 1]) as PortalEvent;
    events.push(trace ? { id: lines[i], event, trace } : { id: lines[i], event });
  }
  return { newestId: events[events.length - 1].id, inline: { after: lines[0], events } };
}

/**
 * A conversation's events as a Redis stream: workers append, the gateway reads. The stream id is the
 * SSE event id, so a client reconnecting with `Last-Event-ID` reads exactly what it missed.
 * Events older than the retention are trimmed on every append, and the stream of a conversation
 * that has had none for as long expires.
 */
export class ConversationEvents {
  private readonly writer: RedisClient;
  /** Per conversation with appends queued or in flight: those not sent yet, in order. */
  private readonly outboxes = new Map<string, Outbox>();

  constructor(
    connections: RedisConnections,
    private readonly prefix: string,
    private readonly retentionMs = 24 * 60 * 60 * 1000,
  ) {
    this.writer = connections.shared('events');
  }

  async publish(conversationId: ConversationId, event: PortalEvent): Promise<string> {
    const [id] = await this.publishAll(conversationId, [event]);
    return id;
  }

  /**
   * Appends `events` in order, in one script with the announcement, so a reader is told once for
   * all of them, never before they are stored, and (when they are small) told what they are.
   * Appends asked for by the code running now (and the promises it settles), or while the
   * conversation's last ones are in flight, go together in one round trip (a block's start and
   * its first delta, a stream's deltas); one connection keeps them in order.
   */
  async publishAll(conversationId: ConversationId, events: readonly PortalEvent[]): Promise<string[]> {
    return this.publishTraced(conversationId, events, 0);
  }

  /**
   * Appends `event` with the conversation's next append, or `lingerMs` from now if none comes
   * first: for an event nobody needs the instant it happens (a turn's `running`), so that when
   * what follows it comes soon (a model's first output) both take one append, one announcement
   * and one write to each reader's client.
   */
  async publishWithNext(
    conversationId: ConversationId,
    event: PortalEvent,
    lingerMs: number,
  ): Promise<string> {
    const [id] = await this.publishTraced(conversationId, [event], lingerMs);
    return id;
  }

  private async publishTraced(
    conversationId: ConversationId,
    events: readonly PortalEvent[],
    lingerMs: number,
  ): Promise<string[]> {
    if (events.length === 0) return [];
    const attributes = {
      'portal.conversation_id': conversationId,
      'portal.events.types': events.map((event) => event.type),
    };
    return inSpan(
      SPAN.eventsPublish,
      attributes,
      () => this.enqueue(conversationId, events, traceparent() ?? '', lingerMs),
      SpanKind.PRODUCER,
    );
  }

  private enqueue(
    conversationId: ConversationId,
    events: readonly PortalEvent[],
    trace: string,
    lingerMs: number,
  ): Promise<string[]> {
    let outbox = this.outboxes.get(conversationId);
    if (!outbox) {
      outbox = { queue: [], busy: false, lingering: null };
      this.outboxes.set(conversationId, outbox);
    }
    const appended = new Promise<string[]>((resolve, reject) =>
      outbox.queue.push({ events, trace, resolve, reject }),
    );
    if (outbox.busy) return appended;
    if (lingerMs > 0) {
      outbox.lingering ??= setTimeout(() => {
        outbox.lingering = null;
        outbox.busy = true;
        this.flush(conversationId);
      }, lingerMs);
      return appended;
    }
    // When the code running now and its promises are done (a stream's chunks read at once
    // among them), not on the event loop's next turn: a turn's events wait for no other I/O.
    clearTimeout(outbox.lingering ?? undefined);
    outbox.lingering = null;
    outbox.busy = true;
    process.nextTick(() => this.flush(conversationId));
    return appended;
  }

  /**
   * Sends what is queued: one script per run of appends with the same trace context (each event
   * keeps its own span's traceparent), all at once; once they are answered, what queued meanwhile.
   */
  private flush(conversationId: ConversationId): void {
    const outbox = this.outboxes.get(conversationId)!;
    const queue = outbox.queue;
    if (queue.length === 0) {
      this.outboxes.delete(conversationId);
      return;
    }
    outbox.queue = [];
    const sent: Promise<unknown>[] = [];
    for (let from = 0; from < queue.length;) {
      let to = from + 1;
      while (to < queue.length && queue[to].trace === queue[from].trace) to++;
      const group = queue.slice(from, to);
      const events = group.flatMap((queued) => queued.events);
      const appended = this.append(conversationId, events, group[0].trace).then(
        (ids) => {
          let at = 0;
          for (const queued of group) queued.resolve(ids.slice(at, (at += queued.events.length)));
        },
        (err: unknown) => group.forEach((queued) => queued.reject(err)),
      );
      sent.push(appended);
      from = to;
    }
    void Promise.all(sent).then(() => this.flush(conversationId));
  }

  /** Each event carries `trace`, the publishing span's traceparent, so the SSE send links to it. */
  private async append(
    conversationId: ConversationId,
    events: readonly PortalEvent[],
    trace: string,
  ): Promise<string[]> {
    const key = conversationEventsKey(this.prefix, conversationId);
    const channel = conversationEventsChannel(this.prefix, conversationId);
    const minId = `${Date.now() - this.retentionMs}-0`;
    const fields = events.map((event) => JSON.stringify(event));
    // EVAL, not EVALSHA: a Redis that lost its scripts (a restart) cannot answer NOSCRIPT and
    // have the retry overtaken by the appends sent after it.
    const args = [key, channel, minId, trace, INLINE_MAX_BYTES, this.retentionMs, ...fields];
    return (await this.writer.eval(APPEND_ALL_SCRIPT, 1, ...args)) as string[];
  }

  /** Everything retained after `afterId` (exclusive), oldest first. */
  async readAfter(conversationId: ConversationId, afterId: string, count = 1000): Promise<StoredEvent[]> {
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
    conversationId: ConversationId,
    turnId: TurnId,
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
  async lastId(conversationId: ConversationId): Promise<string> {
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
  async remove(conversationId: ConversationId): Promise<void> {
    await this.writer.del(conversationEventsKey(this.prefix, conversationId));
  }
}

export function toStoredEvent([id, fields]: [string, string[]]): StoredEvent {
  const event = JSON.parse(fields[1]) as PortalEvent;
  return fields[2] === 't' ? { id, event, trace: fields[3] } : { id, event };
}
