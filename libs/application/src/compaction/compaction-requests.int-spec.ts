import { randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import type { DataSource } from 'typeorm';
import { QueueName, readRedisUrl } from '@portal/contracts';
import { type CompactionBlock, ConversationId, isDomainError, OrgId } from '@portal/domain';
import { BullMqClient } from '@portal/queue';
import { RedisConnections, ConversationEvents } from '@portal/redis';
import {
  BlockRepository,
  createScratchDatabase,
  TurnLeaseRepository,
  TurnRepository,
  type ScratchDatabase,
} from '@portal/dal';
import { answer, newConversation, seedOrg, settledTurn } from '@portal/dal/testing';
import { CompactionRequests } from './compaction-requests.service';
import { compactionJobId } from './compaction-ids.util';

const ORG = OrgId('acme');
const redisUrl = readRedisUrl(process.env);
const prefix = `test-cmp-${randomUUID().slice(0, 8)}`;

let db: ScratchDatabase;
let ds: DataSource;
let queues: BullMqClient;
let events: ConversationEvents;
let requests: CompactionRequests;
const redis = new IORedis(redisUrl);
const connections = new RedisConnections({ url: redisUrl });

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'application_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  await seedOrg(ds, ORG);
  queues = new BullMqClient({ redis: connections, prefix });
  events = new ConversationEvents(connections, prefix);
  requests = new CompactionRequests(ds, queues, events);
});

afterAll(async () => {
  await queues.close();
  await connections.close();
  const keys = [...(await redis.keys(`{${prefix}:*`)), ...(await redis.keys(`${prefix}:*`))];
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
  await db.drop();
});

const compaction = (to: number, trigger: CompactionBlock['trigger'] = 'MANUAL') =>
  ({
    kind: 'compaction',
    summary: `Summary of turns 1–${to}`,
    trigger,
    coversTurns: { from: 1, to },
  }) as const;

const open = (conversationId: string, over: { text?: string; attachmentIds?: string[] } = {}) =>
  requests.open(ORG, {
    conversationId: ConversationId(conversationId),
    text: over.text ?? '/compact keep every figure',
    attachmentIds: over.attachmentIds,
    effort: 'low',
    model: 'gpt-test',
  });

/** What a refusal must leave untouched: the turns, the compaction queue and the event stream. */
async function recorded(conversationId: string) {
  const turns = await new TurnRepository(ds).listForConversation(ORG, ConversationId(conversationId));
  const jobs = await queues.queue(QueueName.Compactions).getJobCounts('wait', 'delayed', 'active');
  return {
    turns: turns.map((t) => [t.n, t.kind, t.status]),
    jobs: Object.values(jobs).reduce((a, b) => a + b, 0),
    events: (await events.readAfter(ConversationId(conversationId), '0-0')).length,
  };
}

async function expectRefused(conversationId: string, rule: string, message: RegExp, over = {}) {
  const before = await recorded(conversationId);
  const err = await open(conversationId, over).catch((e: unknown) => e);
  expect(isDomainError(err, 'compact_refused')).toBe(true);
  expect((err as Error).message).toMatch(message);
  expect((err as { details?: unknown }).details).toEqual({ rule });
  expect(await recorded(conversationId)).toEqual(before);
}

describe('CompactionRequests: /compact is refused, recording nothing', () => {
  it.each(['queued', 'running', 'paused'] as const)('while the latest turn is %s', async (status) => {
    const id = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, id, { text: 'q1', blocks: [answer('a1')] });
    const { turn } = (await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: id,
      effort: 'low',
      model: 'gpt-test',
      text: 'q2',
    }))!;
    if (status !== 'queued') await new TurnLeaseRepository(ds).claim(ORG, turn.id, 'w', 60_000);
    if (status === 'paused') await new TurnRepository(ds).updateStatus(ORG, turn.id, 'paused');
    await expectRefused(id, 'turn_open', new RegExp(`while the conversation's latest turn is ${status}$`));
  });

  it.each([
    ['in a new conversation', []],
    [
      'right after a manual compaction',
      [
        {
          text: '/compact',
          kind: 'compaction',
          blocks: [compaction(1), answer('Context summarised: turns 1–1.')],
        },
      ],
    ],
    [
      'when an AUTO compaction is the last block written',
      [{ text: 'q2', status: 'failed', blocks: [compaction(2, 'AUTO')] }],
    ],
    [
      'after a failed /compact that followed a compaction',
      [
        {
          text: '/compact',
          kind: 'compaction',
          blocks: [compaction(1), answer('Context summarised: turns 1–1.')],
        },
        { text: '/compact again', kind: 'compaction', status: 'failed' },
      ],
    ],
  ] as const)('when nothing has been written since the last compaction: %s', async (_name, turns) => {
    const id = await newConversation(ds, ORG);
    if (turns.length > 0) await settledTurn(ds, ORG, id, { text: 'q1', blocks: [answer('a1')] });
    for (const t of turns) await settledTurn(ds, ORG, id, t as Parameters<typeof settledTurn>[3]);
    await expectRefused(id, 'nothing_written', /nothing has been written since the last compaction$/);
  });

  it('when the message carries attachments', async () => {
    const id = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, id, { text: 'q1', blocks: [answer('a1')] });
    await expectRefused(id, 'attachments', /the message carries attachments$/, {
      attachmentIds: [randomUUID()],
    });
  });

  it('refuses a message that is not /compact as invalid', async () => {
    const id = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, id, { text: 'q1', blocks: [answer('a1')] });
    await expect(open(id, { text: 'please /compact' })).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('CompactionRequests.open', () => {
  it('opens a queued compaction turn with the message as typed, publishes it and enqueues compact MANUAL', async () => {
    const id = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, id, { text: 'q1', blocks: [answer('a1')] });
    await settledTurn(ds, ORG, id, {
      text: '/compact',
      kind: 'compaction',
      blocks: [compaction(1), answer('Context summarised: turns 1–1.')],
    });
    await settledTurn(ds, ORG, id, { text: 'q3', blocks: [answer('a3')] });

    const opened = await open(id);
    expect(opened.turn).toMatchObject({
      n: 4,
      kind: 'compaction',
      status: 'queued',
      model: 'gpt-test',
      effort: 'low',
    });
    const messages = await new BlockRepository(ds).listTurnMessages(ORG, opened.turn.id);
    expect(messages).toHaveLength(1);
    expect(messages[0].blocks).toEqual([
      expect.objectContaining({ kind: 'text', text: '/compact keep every figure', steering: false }),
    ]);
    const job = await queues.queue(QueueName.Compactions).getJob(opened.jobId);
    expect(opened.jobId).toBe(compactionJobId(opened.turn.id, opened.requestId));
    expect(job?.name).toBe('compact');
    expect(job?.data).toEqual({
      orgId: ORG,
      turnId: opened.turn.id,
      trigger: 'MANUAL',
      requestId: opened.requestId,
    });
    expect((await events.readAfter(id, '0-0')).map((e) => e.event.type)).toEqual([
      'turn_started',
      'block_finished',
      'turn_state',
    ]);
    await job?.remove();
  });
});
