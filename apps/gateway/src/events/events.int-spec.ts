import { randomUUID } from 'node:crypto';
import type { PortalEvent } from '@portal/contracts';
import { ConversationEvents } from '@portal/queue';
import { RedisConnections } from '@portal/redis';
import {
  newConversation,
  openSse,
  REDIS_URL,
  startGateway,
  type Harness,
  type SseClient,
} from '../../test/gateway-harness.util';

let gw: Harness;
let events: ConversationEvents;
/** A worker's connections, apart from the gateway's. */
const redis = new RedisConnections({ url: REDIS_URL });
beforeAll(async () => {
  gw = await startGateway();
  events = new ConversationEvents(redis, gw.prefix);
});
afterAll(async () => {
  await redis.close();
  await gw?.close();
});

const state = (n: number): PortalEvent => ({
  type: 'text_delta',
  turnId: 't',
  blockId: 'b',
  text: `delta ${n}`,
});

/** Publishes events the way the orchestrator does; returns their stream ids. */
async function publish(conversationId: string, from: number, to: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = from; n <= to; n++) ids.push(await events.publish(conversationId, state(n)));
  return ids;
}

const texts = (received: { data: PortalEvent }[]) =>
  received.map((e) => (e.data as Extract<PortalEvent, { type: 'text_delta' }>).text);

describe('GET /v1/conversations/:id/events', () => {
  const clients: SseClient[] = [];
  afterEach(() => clients.splice(0).forEach((c) => c.close()));
  const open = async (...args: Parameters<typeof openSse>) => {
    const client = await openSse(...args);
    clients.push(client);
    return client;
  };

  it('sends the SSE headers at once, before any event', async () => {
    const sse = await open(gw, await newConversation(gw));
    expect(sse.status).toBe(200);
    expect(sse.headers['content-type']).toBe('text/event-stream');
    expect(sse.headers['cache-control']).toBe('no-cache');
    expect(sse.headers['x-accel-buffering']).toBe('no');
    const metrics = (await gw.call('GET', '/metrics', { as: null })).body as string;
    expect(metrics).toMatch(/portal_gateway_sse_connections [1-9]/);
  });

  it('starts from now without Last-Event-ID, and sends events in order with their stream ids', async () => {
    const conversationId = await newConversation(gw);
    await publish(conversationId, 1, 2);
    const sse = await open(gw, conversationId);
    const ids = await publish(conversationId, 3, 5);
    const received = await sse.take(3);
    expect(received.map((e) => e.id)).toEqual(ids);
    expect(texts(received)).toEqual(['delta 3', 'delta 4', 'delta 5']);
  });

  it('replays what came after Last-Event-ID, then follows, without loss or duplicates', async () => {
    const conversationId = await newConversation(gw);
    const ids = await publish(conversationId, 1, 5);
    const byHeader = await open(gw, conversationId, { lastEventId: ids[1] });
    const byQuery = await open(gw, conversationId, { query: `?lastEventId=${ids[3]}` });
    const [later] = await publish(conversationId, 6, 6);
    const replayed = await byHeader.take(4);
    expect(replayed.map((e) => e.id)).toEqual([ids[2], ids[3], ids[4], later]);
    expect(texts(replayed)).toEqual(['delta 3', 'delta 4', 'delta 5', 'delta 6']);
    expect(texts(await byQuery.take(2))).toEqual(['delta 5', 'delta 6']);
  });

  it('resumes exactly where a dropped client left off', async () => {
    const conversationId = await newConversation(gw);
    const first = await open(gw, conversationId);
    await publish(conversationId, 1, 3);
    const seen = await first.take(2);
    first.close();
    await publish(conversationId, 4, 5);
    const second = await open(gw, conversationId, { lastEventId: seen[1].id });
    expect(texts(await second.take(3))).toEqual(['delta 3', 'delta 4', 'delta 5']);
  });

  it('gives two clients the same events', async () => {
    const conversationId = await newConversation(gw);
    const a = await open(gw, conversationId);
    const b = await open(gw, conversationId);
    await publish(conversationId, 1, 3);
    const [fromA, fromB] = await Promise.all([a.take(3), b.take(3)]);
    expect(fromA).toEqual(fromB);
    expect(texts(fromA)).toEqual(['delta 1', 'delta 2', 'delta 3']);
  });

  it('sends compaction_finished with the summary without its references, as the transcript shows it', async () => {
    const conversationId = await newConversation(gw);
    const sse = await open(gw, conversationId);
    const summary =
      'Summary of turns 1–2\n## Facts\n- The invoice total is 420 EUR (ref:tr_9f2) ref:tr_7a1\n';
    const block = {
      id: randomUUID(),
      seq: 2,
      kind: 'compaction' as const,
      summary,
      trigger: 'AUTO' as const,
      coversTurns: { from: 1, to: 2 },
    };
    await events.publish(conversationId, { type: 'compaction_finished', turnId: 't', block });
    const [received] = await sse.take(1);
    const shown = (received.data as Extract<PortalEvent, { type: 'compaction_finished' }>).block;
    expect(shown).toEqual({
      ...block,
      summary: 'Summary of turns 1–2\n## Facts\n- The invoice total is 420 EUR\n',
    });
  });

  it("answers another user's or a missing conversation 404, a bad event id 400, no key 401", async () => {
    const conversationId = await newConversation(gw, 'alice');
    for (const [as, id] of [
      ['bob', conversationId],
      ['mallory', conversationId],
      ['alice', randomUUID()],
    ] as const) {
      const res = await gw.call('GET', `/v1/conversations/${id}/events`, { as });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const bad = await gw.call('GET', `/v1/conversations/${conversationId}/events`, {
      headers: { 'last-event-id': 'yesterday' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    expect((await gw.call('GET', `/v1/conversations/${conversationId}/events`, { as: null })).status).toBe(
      401,
    );
  });
});

describe('shutdown', () => {
  it('ends open streams when the gateway closes', async () => {
    const own = await startGateway();
    try {
      const sse = await openSse(own, await newConversation(own));
      await own.app.close();
      await expect(sse.next()).rejects.toThrow('stream ended');
    } finally {
      await own.close();
    }
  });
});
