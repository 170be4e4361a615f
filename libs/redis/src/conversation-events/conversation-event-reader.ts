import type { ConversationId } from '@portal/domain';
import { Logger } from '@nestjs/common';
import { disconnectClient, type RedisClient, type RedisConnections } from '../redis-connections';
import { conversationEventsChannel, conversationEventsKey } from '@portal/contracts';
import { parseAnnouncement, toStoredEvent, type StoredEvent } from './conversation-events';
import { compareStreamIds } from './stream-id.util';

/** Where a subscription's events go (one SSE client). */
export interface EventSink {
  /** Takes events oldest first; never one at or before an event it was already given. */
  deliver(events: StoredEvent[]): void;
  /** Resolves once the sink can take more; a replay waits for it between pages. */
  ready(): Promise<void>;
  /** The reader cannot serve it any more (Redis refused its subscription or replay). */
  end(): void;
}

export interface EventSubscription {
  close(): void;
}

interface Subscriber {
  sink: EventSink;
  /** The newest id given to the sink (or the one it started after). */
  lastId: string;
  /** False while it replays what it missed; the shared reads skip it until it has caught up. */
  live: boolean;
  closed: boolean;
}

/** A conversation with at least one local subscriber. */
interface Followed {
  key: string;
  channel: string;
  /** The newest id the shared reads have handed out; null until they start. */
  cursor: string | null;
  /** Subscribed to the channel and the cursor set. */
  started: Promise<void>;
  subscribers: Set<Subscriber>;
  reading: boolean;
  /** A notification came while reading: read once more. */
  again: boolean;
  /** When the reader last heard of it (started, announced, read new events), by `Date.now()`. */
  heardAt: number;
}

/** Events per XRANGE, for the shared reads and the replays. */
const PAGE = 500;
/** Tries at following a conversation before its subscribers are ended. */
const START_ATTEMPTS = 5;
/** A followed conversation not heard of for this long is read anyway (see `resyncQuiet`). */
const RESYNC_MS = 5_000;

/**
 * The gateway's one reader of conversation events: two Redis connections whatever the number of
 * streams. Writers announce each append on the conversation's channel; the reader subscribes to
 * the channels of the conversations that have a local subscriber. An announcement carries small
 * appends whole: when they follow what the reader has handed out, they go to each subscriber as
 * they are; otherwise (a larger append, a gap, a read under way) the reader reads the new events
 * once with XRANGE. (A batched XREAD BLOCK over every followed key cost Redis about six times the
 * CPU per event with 1,000 keys, and cannot span slots on Redis Cluster.)
 *
 * Nothing is missed between a replay and the live part: a subscriber goes live only once its
 * replay has reached what the shared reads and announcements have handed out (checked after each
 * page, with no wait between the check and going live); ids at or before a subscriber's `lastId`
 * are never given to it twice. Announcements are at most once: a conversation not heard of for a
 * while is read anyway (`resyncQuiet`), so one that was lost makes its events late, never lost.
 */
export class ConversationEventReader {
  private readonly logger = new Logger('ConversationEventReader');
  private readonly listener: RedisClient;
  private readonly commands: RedisClient;
  private readonly followed = new Map<string, Followed>();
  private connectedBefore = false;
  private closing = false;
  private readonly resyncTimer: NodeJS.Timeout;

  constructor(
    connections: RedisConnections,
    private readonly prefix: string,
    options: { resyncMs?: number } = {},
  ) {
    // Named, so that an operator (and a test) can tell the reader's connections in CLIENT LIST.
    this.listener = connections.dedicated('events-listener', `${prefix}:events-listener`);
    this.commands = connections.dedicated('events-reader', `${prefix}:events-reader`);
    this.listener.on('message', (channel: string, message: string) => this.announced(channel, message));
    this.listener.on('ready', () => this.reconnected());
    for (const redis of [this.listener, this.commands]) redis.on('error', () => undefined); // reconnects
    const resyncMs = options.resyncMs ?? RESYNC_MS;
    this.resyncTimer = setInterval(() => this.resyncQuiet(resyncMs), resyncMs);
  }

  /**
   * Hands `sink` every event of the conversation after `afterId`, in order: what is retained
   * first, then new ones as they are appended, until the subscription is closed.
   */
  subscribe(conversationId: ConversationId, afterId: string, sink: EventSink): EventSubscription {
    const channel = conversationEventsChannel(this.prefix, conversationId);
    const subscriber: Subscriber = { sink, lastId: afterId, live: false, closed: false };
    let followed = this.followed.get(channel);
    if (!followed) {
      const entry: Followed = {
        key: conversationEventsKey(this.prefix, conversationId),
        channel,
        cursor: null,
        started: Promise.resolve(),
        subscribers: new Set(),
        reading: false,
        again: false,
        heardAt: Date.now(),
      };
      entry.started = this.start(entry);
      this.followed.set(channel, entry);
      followed = entry;
    }
    followed.subscribers.add(subscriber);
    void this.catchUp(followed, subscriber);
    const entry = followed;
    return {
      close: () => {
        if (subscriber.closed) return;
        subscriber.closed = true;
        entry.subscribers.delete(subscriber);
        if (entry.subscribers.size > 0 || this.followed.get(channel) !== entry) return;
        this.followed.delete(channel);
        this.listener.unsubscribe(channel).catch((err) => this.failed(`unsubscribe ${channel}`, err));
      },
    };
  }

  /** How many conversations have a local subscriber. */
  get followedCount(): number {
    return this.followed.size;
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.resyncTimer);
    this.followed.clear();
    await Promise.all([disconnectClient(this.listener), disconnectClient(this.commands)]);
  }

  /**
   * Subscribes to the conversation's channel, then starts the shared reads at the stream's newest
   * id: what is older is each subscriber's own replay, at its own pace. The read after that picks
   * up an append announced before the cursor was known.
   */
  private async start(followed: Followed): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.listener.subscribe(followed.channel);
        const [newest] = await this.commands.xrevrange(followed.key, '+', '-', 'COUNT', 1);
        followed.cursor = newest?.[0] ?? '0-0';
        break;
      } catch (err) {
        // A cluster client refuses a subscription while it is still connecting to the node that
        // takes it: try again shortly before giving up on the subscribers.
        const current = this.followed.get(followed.channel) === followed;
        if (current && !this.closing && attempt < START_ATTEMPTS) {
          this.failed(`subscribe ${followed.channel} (attempt ${attempt})`, err);
          await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
          continue;
        }
        // Its subscribers end (and reconnect); a later subscriber starts afresh.
        if (current) this.followed.delete(followed.channel);
        throw err;
      }
    }
    void this.read(followed);
  }

  private announced(channel: string, message: string): void {
    const followed = this.followed.get(channel);
    if (!followed?.cursor) return; // not started: its start reads
    followed.heardAt = Date.now();
    const { newestId, inline } = parseAnnouncement(message);
    if (compareStreamIds(newestId, followed.cursor) <= 0) return;
    if (inline && !followed.reading && inline.after === followed.cursor) {
      followed.cursor = newestId;
      for (const subscriber of followed.subscribers) if (subscriber.live) offer(subscriber, inline.events);
      return;
    }
    void this.read(followed);
  }

  /** Reads what came after the cursor and hands it to the live subscribers; one read at a time. */
  private async read(followed: Followed): Promise<void> {
    if (followed.cursor === null) return; // not started: its start reads
    if (followed.reading) {
      followed.again = true;
      return;
    }
    followed.reading = true;
    try {
      do {
        followed.again = false;
        for (;;) {
          const rows: [string, string[]][] = await this.commands.xrange(
            followed.key,
            `(${followed.cursor}`,
            '+',
            'COUNT',
            PAGE,
          );
          if (this.followed.get(followed.channel) !== followed) return;
          // Not `return`: an announcement that came during this read must still be read.
          if (rows.length === 0) break;
          const batch: StoredEvent[] = rows.map(toStoredEvent);
          followed.cursor = batch[batch.length - 1].id;
          followed.heardAt = Date.now();
          for (const subscriber of followed.subscribers) if (subscriber.live) offer(subscriber, batch);
          if (rows.length < PAGE) break;
        }
      } while (followed.again);
    } catch (err) {
      this.failed(`read ${followed.key}`, err);
      // From the same cursor a moment later: late, not lost.
      setTimeout(() => this.followed.get(followed.channel) === followed && void this.read(followed), 1000);
    } finally {
      followed.reading = false;
    }
  }

  /**
   * Replays a later subscriber's missed events page by page, at its own pace, then makes it live
   * once it has what the shared reads and announcements handed out meanwhile.
   */
  private async catchUp(followed: Followed, subscriber: Subscriber): Promise<void> {
    try {
      await followed.started;
      while (!subscriber.closed) {
        if (compareStreamIds(subscriber.lastId, followed.cursor!) >= 0) break;
        const rows = await this.commands.xrange(followed.key, `(${subscriber.lastId}`, '+', 'COUNT', PAGE);
        if (subscriber.closed) return;
        // Nothing after its id: the cursor's events are gone (the stream was dropped).
        if (rows.length === 0) break;
        offer(subscriber, rows.map(toStoredEvent));
        if (rows.length === PAGE) await subscriber.sink.ready();
      }
      subscriber.live = true;
    } catch (err) {
      this.failed(`replay ${followed.key}`, err);
      subscriber.sink.end();
    }
  }

  /**
   * Reads each followed conversation not heard of for `quietMs`. Pub/sub can drop an announcement
   * while the listener's connection stays up: on a Redis Cluster, ioredis moves its subscriber to
   * another node without a word, and what is published meanwhile is lost. A read that finds
   * events no announcement brought subscribes to the channel again, in case the subscription went
   * with them.
   */
  private resyncQuiet(quietMs: number): void {
    const quietSince = Date.now() - quietMs;
    for (const followed of this.followed.values()) {
      if (followed.cursor === null || followed.reading || followed.heardAt > quietSince) continue;
      const before = followed.cursor;
      followed.heardAt = Date.now();
      void this.read(followed).then(() => {
        if (followed.cursor === before || this.followed.get(followed.channel) !== followed) return;
        this.logger.warn(`${followed.key}: found events never announced; subscribing again`);
        this.listener
          .subscribe(followed.channel)
          .catch((err) => this.failed(`subscribe ${followed.channel}`, err));
      });
    }
  }

  /**
   * After a reconnection: appends announced while the listener was away were not heard, so every
   * followed conversation is read once its subscriptions are back (the PING answers after them).
   */
  private reconnected(): void {
    if (!this.connectedBefore) {
      this.connectedBefore = true;
      return;
    }
    setImmediate(() => {
      this.listener.ping().then(
        () => this.followed.forEach((followed) => void this.read(followed)),
        (err) => this.failed('resubscribe', err),
      );
    });
  }

  private failed(what: string, err: unknown): void {
    if (!this.closing) this.logger.error(`${what}: ${(err as Error).message}`);
  }
}

/** Gives `subscriber` the events of `batch` it has not had yet. */
function offer(subscriber: Subscriber, batch: StoredEvent[]): void {
  let from = 0;
  while (from < batch.length && compareStreamIds(batch[from].id, subscriber.lastId) <= 0) from++;
  if (from === batch.length) return;
  const fresh = from === 0 ? batch : batch.slice(from);
  subscriber.lastId = fresh[fresh.length - 1].id;
  subscriber.sink.deliver(fresh);
}
