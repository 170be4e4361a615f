import { ConversationId } from '@portal/domain';
import { randomBytes, randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import {
  conversationEventsChannel,
  conversationEventsKey,
  readRedisUrl,
  type PortalEvent,
} from '@portal/contracts';
import { RedisConnections, type RedisClient } from '../redis-connections';
import { ConversationEventReader, type EventSink } from './conversation-event-reader';
import { ConversationEvents, parseAnnouncement, type StoredEvent } from './conversation-events';

const redisUrl = readRedisUrl(process.env);
const connections = new RedisConnections({ url: redisUrl });
const prefix = `reader-spec-${randomBytes(4).toString('hex')}`;

let redis: IORedis;
let events: ConversationEvents;
let reader: ConversationEventReader;
beforeAll(() => {
  redis = new IORedis(redisUrl);
  events = new ConversationEvents(connections, prefix);
});
beforeEach(() => {
  reader = new ConversationEventReader(connections, prefix);
});
afterEach(() => reader.close());
afterAll(async () => {
  await connections.close();
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

const delta = (n: number): PortalEvent => ({ type: 'text_delta', turnId: 't', blockId: 'b', text: `${n}` });

/** A sink that keeps what it is given; `until(n)` waits for the n-th event. */
function collector() {
  const received: StoredEvent[] = [];
  let wake = () => undefined as void;
  const sink: EventSink & { received: StoredEvent[]; ended: boolean; until(n: number): Promise<void> } = {
    received,
    ended: false,
    deliver(batch) {
      received.push(...batch);
      wake();
    },
    ready: () => Promise.resolve(),
    end() {
      sink.ended = true;
    },
    async until(n) {
      const deadline = Date.now() + 10_000;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`got ${received.length} of ${n} events`);
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50);
        });
      }
    },
  };
  return sink;
}

async function eventually(check: () => Promise<boolean>, what: string) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const idsAfter = async (conversationId: string, afterId: string) =>
  (await events.readAfter(ConversationId(conversationId), afterId, 100_000)).map((e) => e.id);

/** The reader's connections to Redis, by the names it gives them. */
async function readerConnections(): Promise<number> {
  const list = (await redis.client('LIST')) as string;
  return list.split('\n').filter((line) => line.includes(` name=${prefix}:events-`)).length;
}

/** Runs `test` with the announcements of the conversation's appends collected as they come. */
async function withAnnouncements(conversationId: string, test: (told: string[]) => Promise<void>) {
  const told: string[] = [];
  const sub = redis.duplicate();
  try {
    await sub.subscribe(conversationEventsChannel(prefix, ConversationId(conversationId)));
    sub.on('message', (_channel, message: string) => told.push(message));
    await test(told);
  } finally {
    sub.disconnect();
  }
}

describe('ConversationEvents', () => {
  it('keeps a stream for the retention after its last append, then lets it expire', async () => {
    const retentionMs = 60_000;
    const kept = new ConversationEvents(connections, prefix, retentionMs);
    const conversation = ConversationId(randomUUID());
    const key = conversationEventsKey(prefix, conversation);
    await kept.publishAll(conversation, [delta(1)]);
    const first = await redis.pttl(key);
    expect(first).toBeGreaterThan(retentionMs - 5_000);
    expect(first).toBeLessThanOrEqual(retentionMs);
    await redis.pexpire(key, 1_000);
    await kept.publishAll(conversation, [delta(2)]);
    expect(await redis.pttl(key)).toBeGreaterThan(retentionMs - 5_000);
    expect(await redis.xlen(key)).toBe(2);
  });
});

describe('ConversationEventReader', () => {
  it('gives every subscriber of every conversation its new events in order, on two connections', async () => {
    const conversations = Array.from({ length: 20 }, () => randomUUID());
    const sinks = conversations.flatMap((id) => Array.from({ length: 5 }, () => ({ id, sink: collector() })));
    for (const { id, sink } of sinks)
      reader.subscribe(ConversationId(id), await events.lastId(ConversationId(id)), sink);
    for (let n = 1; n <= 3; n++)
      await Promise.all(
        conversations.map((id) => events.publishAll(ConversationId(id), [delta(n), delta(n + 10)])),
      );
    for (const { id, sink } of sinks) {
      await sink.until(6);
      expect(sink.received.map((e) => e.id)).toEqual(await idsAfter(id, '0-0'));
    }
    expect(await readerConnections()).toBe(2);
  });

  it('replays from any id, then follows, without gap or repeat while appends go on', async () => {
    const id = randomUUID();
    const first = await events.publish(ConversationId(id), delta(0));
    const joined: { afterId: string; sink: ReturnType<typeof collector> }[] = [];
    let appended = 0;
    const appending = (async () => {
      for (let n = 1; n <= 150; n++) {
        const batch = Array.from({ length: 1 + (n % 4) }, (_, i) => delta(n * 10 + i));
        await events.publishAll(ConversationId(id), batch);
        appended += batch.length;
      }
    })();
    // Subscribers join while the appends run, starting from the first event, from a recent one,
    // or from now; some of them joining a conversation the reader already follows.
    while (appended < 300) {
      const retained = await idsAfter(id, '0-0');
      for (const afterId of [first, retained[Math.floor(retained.length / 2)], retained.at(-1)!]) {
        const sink = collector();
        reader.subscribe(ConversationId(id), afterId, sink);
        joined.push({ afterId, sink });
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    await appending;
    for (const { afterId, sink } of joined) {
      const expected = await idsAfter(id, afterId);
      await sink.until(expected.length);
      expect(sink.received.map((e) => e.id)).toEqual(expected);
    }
    expect(joined.length).toBeGreaterThan(6);
  });

  it('misses no event while appends from several writers come one at a time during its reads', async () => {
    const id = randomUUID();
    const sink = collector();
    reader.subscribe(ConversationId(id), await events.lastId(ConversationId(id)), sink);
    // Four writers as four processes would be: each on connections of its own.
    const own = Array.from({ length: 4 }, () => new RedisConnections({ url: redisUrl }));
    const writers = own.map((c) => new ConversationEvents(c, prefix));
    try {
      await Promise.all(
        writers.map(async (writer, w) => {
          for (let n = 0; n < 150; n++) await writer.publish(ConversationId(id), delta(w * 1000 + n));
        }),
      );
    } finally {
      await Promise.all(own.map((c) => c.close()));
    }
    await sink.until(600);
    expect(sink.received.map((e) => e.id)).toEqual(await idsAfter(id, '0-0'));
  });

  it('replays a long backlog page by page, waiting for the sink between pages', async () => {
    const id = randomUUID();
    const live = collector();
    reader.subscribe(ConversationId(id), '0-0', live);
    await events.publishAll(
      ConversationId(id),
      Array.from({ length: 1200 }, (_, n) => delta(n)),
    );
    await live.until(1200);
    const slow = collector();
    let waits = 0;
    slow.ready = async () => {
      waits++;
      await new Promise((r) => setTimeout(r, 20));
    };
    reader.subscribe(ConversationId(id), '0-0', slow);
    await slow.until(1200);
    expect(slow.received.map((e) => e.id)).toEqual(live.received.map((e) => e.id));
    expect(waits).toBe(2); // 1,200 events in pages of 500
  });

  it('reads what was appended while its listener was away once it is back', async () => {
    const id = randomUUID();
    const sink = collector();
    reader.subscribe(ConversationId(id), await events.lastId(ConversationId(id)), sink);
    await events.publish(ConversationId(id), delta(1));
    await sink.until(1);
    const list = (await redis.client('LIST')) as string;
    const listener = list.split('\n').find((line) => line.includes(` name=${prefix}:events-listener`))!;
    await redis.client('KILL', 'ID', /id=(\d+)/.exec(listener)![1]);
    await events.publishAll(ConversationId(id), [delta(2), delta(3)]);
    await sink.until(3);
    expect(sink.received.map((e) => e.id)).toEqual(await idsAfter(id, '0-0'));
  });

  it('reads an append whose announcement was lost once the conversation is quiet, and subscribes again', async () => {
    const id = randomUUID();
    const channel = conversationEventsChannel(prefix, ConversationId(id));
    // The reader's own listener, watched as it subscribes (MONITOR races ioredis's replies when
    // other suites' commands arrive with its answer).
    const opened = jest.spyOn(connections, 'dedicated');
    const quick = new ConversationEventReader(connections, prefix, { resyncMs: 200 });
    const at = opened.mock.calls.findIndex(([role]) => role === 'events-listener');
    const listener = opened.mock.results[at].value as RedisClient;
    opened.mockRestore();
    const subscribe = jest.spyOn(listener, 'subscribe');
    const subscribes = () => subscribe.mock.calls.filter((args) => args.includes(channel)).length;
    try {
      const sink = collector();
      quick.subscribe(ConversationId(id), await events.lastId(ConversationId(id)), sink);
      await events.publish(ConversationId(id), delta(1));
      await sink.until(1);
      expect(subscribes()).toBe(1);
      // Appended as the writers append, announced to nobody.
      await redis.xadd(conversationEventsKey(prefix, ConversationId(id)), '*', 'e', JSON.stringify(delta(2)));
      await sink.until(2);
      expect(sink.received.map((e) => e.id)).toEqual(await idsAfter(id, '0-0'));
      await eventually(async () => subscribes() === 2, 'the channel subscribed again');
    } finally {
      subscribe.mockRestore();
      await quick.close();
    }
  });

  it('stops listening to a conversation when its last subscriber leaves', async () => {
    const id = randomUUID();
    const channel = conversationEventsChannel(prefix, ConversationId(id));
    const listeners = async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1];
    const a = reader.subscribe(ConversationId(id), '0-0', collector());
    const b = reader.subscribe(ConversationId(id), '0-0', collector());
    await eventually(async () => (await listeners()) === 1, 'the subscription');
    a.close();
    expect(reader.followedCount).toBe(1);
    b.close();
    expect(reader.followedCount).toBe(0);
    await eventually(async () => (await listeners()) === 0, 'the unsubscription');
  });

  it('is told of each append with its events, and of a large one by its newest id only', async () => {
    const id = randomUUID();
    await withAnnouncements(id, async (told) => {
      const one = await events.publish(ConversationId(id), delta(1));
      const many = await events.publishAll(ConversationId(id), [delta(2), delta(3), delta(4)]);
      const big: PortalEvent = { type: 'text_delta', turnId: 't', blockId: 'b', text: 'x'.repeat(70_000) };
      const large = await events.publish(ConversationId(id), big);
      await eventually(async () => told.length >= 3, 'three announcements');
      expect(told.map(parseAnnouncement)).toEqual([
        { newestId: one, inline: { after: '0-0', events: [{ id: one, event: delta(1) }] } },
        {
          newestId: many[2],
          inline: { after: one, events: many.map((id, n) => ({ id, event: delta(n + 2) })) },
        },
        { newestId: large },
      ]);
      expect(await redis.xlen(conversationEventsKey(prefix, ConversationId(id)))).toBe(5);
    });
  });

  it('sends appends asked for at once, or while others are in flight, together and in order', async () => {
    const id = randomUUID();
    await withAnnouncements(id, async (told) => {
      const atOnce = [
        events.publish(ConversationId(id), delta(1)),
        events.publish(ConversationId(id), delta(2)),
      ];
      atOnce.push(events.publishAll(ConversationId(id), [delta(3), delta(4)]).then((ids) => ids[1]));
      const inFlight = events.publish(ConversationId(id), delta(5));
      await new Promise((resolve) => setImmediate(resolve)); // the append of 1–5 is sent
      const meanwhile = [
        events.publish(ConversationId(id), delta(6)),
        events.publish(ConversationId(id), delta(7)),
      ];
      const ids = await Promise.all([...atOnce, inFlight, ...meanwhile]);
      await eventually(async () => told.length >= 2, 'two announcements');
      expect(told.map((message) => parseAnnouncement(message).inline?.events.map((e) => e.event))).toEqual([
        [1, 2, 3, 4, 5].map(delta),
        [6, 7].map(delta),
      ]);
      const stored = await idsAfter(id, '0-0');
      expect(stored).toHaveLength(7);
      expect(ids).toEqual([stored[0], stored[1], stored[3], stored[4], stored[5], stored[6]]);
    });
  });

  it('holds a lingering append for the next one, and sends it alone once its linger is over', async () => {
    const id = randomUUID();
    const key = conversationEventsKey(prefix, ConversationId(id));
    await withAnnouncements(id, async (told) => {
      const lingering = events.publishWithNext(ConversationId(id), delta(1), 60_000);
      // Another conversation's append on the same connection: answered after anything sent before it.
      await events.publish(ConversationId(randomUUID()), delta(0));
      expect(await redis.xlen(key)).toBe(0);
      const next = events.publishAll(ConversationId(id), [delta(2), delta(3)]);
      const ids = [await lingering, ...(await next)];
      await eventually(async () => told.length >= 1, 'the announcement');
      expect(told.map((message) => parseAnnouncement(message).inline?.events.map((e) => e.event))).toEqual([
        [1, 2, 3].map(delta),
      ]);
      expect(ids).toEqual(await idsAfter(id, '0-0'));

      const startedAt = performance.now();
      const alone = await events.publishWithNext(ConversationId(id), delta(4), 40);
      expect(performance.now() - startedAt).toBeGreaterThanOrEqual(35);
      expect((await idsAfter(id, ids[2])).at(-1)).toBe(alone);
    });
  });

  it('reads an append too large for its announcement, and goes on with the small ones after it', async () => {
    const id = randomUUID();
    const sink = collector();
    reader.subscribe(ConversationId(id), '0-0', sink);
    const channel = conversationEventsChannel(prefix, ConversationId(id));
    const listening = async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 1;
    await eventually(listening, 'the subscription');
    const big: PortalEvent = { type: 'text_delta', turnId: 't', blockId: 'b', text: 'y'.repeat(70_000) };
    await events.publish(ConversationId(id), delta(1));
    await events.publish(ConversationId(id), big);
    await events.publishAll(ConversationId(id), [delta(2), delta(3)]);
    await sink.until(4);
    expect(sink.received.map((e) => e.event)).toEqual([delta(1), big, delta(2), delta(3)]);
    expect(sink.received.map((e) => e.id)).toEqual(await idsAfter(id, '0-0'));
  });
});
