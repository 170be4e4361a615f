import { ConversationId, OrgId, TurnId } from '@portal/domain';
import { randomBytes, randomUUID } from 'node:crypto';
import { Cluster } from 'ioredis';
import {
  cancelChannel,
  conversationEventsKey,
  QueueName,
  type JobData,
  type PortalEvent,
} from '@portal/contracts';
import { Controller, Module } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { BullMqClient, createQueueMicroservice, JobRecord, QueueModule, queueKeyPrefix } from '@portal/queue';
import {
  RedisConnections,
  RedisModule,
  type RedisClient,
  ConversationEventReader,
  ConversationEvents,
} from '@portal/redis';
import { startOwnRedisCluster, type OwnRedisCluster } from './chaos/chaos-infra.util';
import { redisMasters } from './redis.util';

/**
 * What the portal keeps in Redis, on a 3-master Redis Cluster of this suite's own: each use works
 * as on one server, and the keys land where cluster mode needs them.
 */

jest.setTimeout(60_000);

let cluster: OwnRedisCluster;
let redis: RedisConnections;
const prefix = `cluster-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  cluster = await startOwnRedisCluster(3);
  redis = new RedisConnections({ clusterNodes: cluster.nodes });
});

afterAll(async () => {
  await redis?.close();
  await cluster?.stop();
});

const masters = () => redisMasters(redis.shared('state'));
const slotOf = async (key: string) => Number(await redis.shared('state').cluster('KEYSLOT', key));
const ended = (client: RedisClient) =>
  new Promise<void>((resolve) => (client.status === 'end' ? resolve() : client.once('end', () => resolve())));

/** The port of the master that serves `key`'s slot (CLUSTER SLOTS: [first, last, [host, port], …]). */
async function ownerOf(key: string): Promise<number> {
  const slot = await slotOf(key);
  const ranges = (await redis.shared('state').cluster('SLOTS')) as unknown as [
    number,
    number,
    [string, number],
  ][];
  return ranges.find(([first, last]) => slot >= first && slot <= last)![2][1];
}

describe('RedisConnections with REDIS_CLUSTER_NODES', () => {
  it('opens cluster clients, one per role when shared, and closes every one', async () => {
    const own = new RedisConnections({ clusterNodes: cluster.nodes });
    const shared = own.shared('events');
    const follower = own.dedicated('events-reader');
    expect(shared).toBeInstanceOf(Cluster);
    expect(own.shared('events')).toBe(shared);
    expect(follower).not.toBe(shared);
    expect(await shared.set(`${prefix}:probe`, '1')).toBe('OK');
    expect(await follower.get(`${prefix}:probe`)).toBe('1');
    await own.close();
    await Promise.all([ended(shared), ended(follower)]);
    expect(() => own.shared('state')).toThrow(/closed/);
  });
});

describe('on a Redis Cluster', () => {
  it("appends a conversation's events in order, follows them, and spreads conversations over the masters", async () => {
    const events = new ConversationEvents(redis, prefix);
    const conversations = Array.from({ length: 30 }, () => randomUUID());
    const batch = (turnId: string): PortalEvent[] => [
      { type: 'turn_started', turnId },
      { type: 'turn_state', turnId, status: 'running' },
      { type: 'turn_state', turnId, status: 'completed' },
    ];
    // At once, as under load: appends of one tick share a pipeline per node.
    await Promise.all(conversations.map((id) => events.publishAll(ConversationId(id), batch(`t-${id}`))));
    for (const id of conversations) {
      const stored = await events.readAfter(ConversationId(id), '0-0');
      expect(stored.map((s) => s.event)).toEqual(batch(`t-${id}`));
    }
    const owners = await Promise.all(
      conversations.map((id) => ownerOf(conversationEventsKey(prefix, ConversationId(id)))),
    );
    expect(new Set(owners)).toEqual(new Set(cluster.nodes.map((n) => n.port)));

    // The gateway's reader: the replay, then a live append announced on the conversation's slot.
    const reader = new ConversationEventReader(redis, prefix);
    const received: PortalEvent[] = [];
    let arrived = () => undefined as void;
    const subscription = reader.subscribe(ConversationId(conversations[0]), '0-0', {
      deliver: (stored) => {
        received.push(...stored.map((s) => s.event));
        arrived();
      },
      ready: async () => undefined,
      end: () => undefined,
    });
    const live = batch(`live-${conversations[0]}`);
    const expected = [...batch(`t-${conversations[0]}`), ...live];
    const all = new Promise<void>(
      (resolve) => (arrived = () => received.length >= expected.length && resolve()),
    );
    await events.publishAll(ConversationId(conversations[0]), live);
    await all;
    expect(received).toEqual(expected);
    subscription.close();
    await reader.close();
  });

  it('carries a job from producer to consumer, every key of a queue in one slot', async () => {
    let deliver!: (data: JobData<'run-turn'>) => void;
    const received = new Promise<JobData<'run-turn'>>((resolve) => (deliver = resolve));
    @Controller()
    class TurnsHandler {
      @EventPattern(QueueName.Turns)
      async handle(@Payload() data: JobData<'run-turn'>): Promise<void> {
        deliver(data);
      }
    }
    @Module({
      imports: [RedisModule.forRoot({ clusterNodes: cluster.nodes }), QueueModule.forRoot({ prefix })],
      controllers: [TurnsHandler],
    })
    class ClusterWorkerModule {}
    const app = await createQueueMicroservice(ClusterWorkerModule, {
      queues: [QueueName.Turns],
      logger: false,
    });
    try {
      await app.listen();
      const job = new JobRecord(
        { orgId: OrgId('acme'), turnId: TurnId('t-1') },
        { jobId: 'run-turn:t-1:open' },
      );
      await lastValueFrom(app.get(BullMqClient).emit(QueueName.Turns, job));
      await expect(received).resolves.toEqual({ orgId: 'acme', turnId: 't-1' });
      const keys = (
        await Promise.all(
          (await masters()).map((node) => node.keys(`${queueKeyPrefix(prefix, QueueName.Turns)}:*`)),
        )
      ).flat();
      expect(keys.length).toBeGreaterThan(2);
      expect(new Set(await Promise.all(keys.map(slotOf))).size).toBe(1);
    } finally {
      await app.close();
    }
  });

  // The upload hand-off on a cluster: libs/application/src/attachments/upload-handoff.int-spec.ts.
  it('carries the cancel signal to a subscriber', async () => {
    const subscriber = redis.dedicated('subscriber');
    await subscriber.connect();
    await subscriber.subscribe(cancelChannel(prefix));
    const heard = new Promise<string>((resolve) =>
      subscriber.once('message', (_channel, turnId) => resolve(turnId)),
    );
    await redis.shared('state').publish(cancelChannel(prefix), 't-cancelled');
    await expect(heard).resolves.toBe('t-cancelled');
  });
});
