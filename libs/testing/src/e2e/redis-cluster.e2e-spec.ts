import { ConversationId } from '@portal/domain';
import { conversationEventsKey, QueueName } from '@portal/contracts';
import { queueKeyPrefix } from '@portal/queue';
import { RedisConnections } from '@portal/redis';
import { startOwnRedisCluster, type OwnRedisCluster } from '../chaos/chaos-infra.util';
import { redisMasters } from '../redis.util';
import { startFakeOpenAI, type FakeOpenAI, type FakeRequest, type FakeScript } from '../fake-openai';
import {
  compactingModels,
  contentText,
  isSummaryRequest,
  memoryOf,
  openConversation,
  summaryAnswer,
} from './compaction.fixtures';
import {
  E2EConversation,
  E2E_KEYS,
  e2eBootstrap,
  isTitleRequest,
  startToolServer,
  type ToolServer,
} from './portal.fixtures';
import { startPortal, type RunningPortal } from './portal.harness';

/**
 * Issue #28: every service as a real process on a 3-master Redis Cluster of the suite's own
 * (REDIS_CLUSTER_NODES): turns with a tool call, an upload read by the ingest worker, and an AUTO
 * compaction the orchestrator asks of the compaction-worker and waits for.
 */

jest.setTimeout(120_000);

type Handler = (request: FakeRequest) => FakeScript;

let cluster: OwnRedisCluster;
let fake: FakeOpenAI;
let tools: ToolServer;
let portal: RunningPortal;
const handlers = new Map<string, Handler>();
const conversations: E2EConversation[] = [];

const tag = (key: string) => `[k:${key}]`;

/** Answers by the newest `[k:…]` key of the request's messages; summary calls with a summary. */
function route(request: FakeRequest): FakeScript {
  if (isTitleRequest(request)) return 'A title';
  if (isSummaryRequest(request)) return summaryAnswer(request);
  const key = [...JSON.stringify(request.body?.messages ?? []).matchAll(/\[k:([\w-]+)\]/g)].at(-1)?.[1];
  return (key && handlers.get(key)?.(request)) ?? 'Fake answer.';
}

async function conversation(key: string, handler: Handler): Promise<E2EConversation> {
  handlers.set(key, handler);
  const chat = await openConversation(portal.baseURL);
  conversations.push(chat);
  return chat;
}

beforeAll(async () => {
  cluster = await startOwnRedisCluster(3);
  fake = await startFakeOpenAI({ defaultResponder: route });
  tools = await startToolServer();
  tools.respond((r) => ({
    body: { tool: r.path.slice(1), rows: 'Revenue by quarter and region. '.repeat(70) },
  }));
  portal = await startPortal({
    redis: { clusterNodes: cluster.nodes },
    models: compactingModels(fake.baseURL),
    bootstrap: e2eBootstrap(tools.url),
    env: { PORTAL_TOOL_URL_ALLOW: `${tools.url}/` },
  });
});

afterAll(async () => {
  for (const c of conversations) c.close();
  await portal?.stop();
  await tools?.close();
  await fake?.close();
  await cluster?.stop();
});

describe('on a Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  it('runs turns with a tool call in several conversations, streamed over SSE', async () => {
    const chats = await Promise.all(
      ['one', 'two', 'three'].map((key) =>
        conversation(key, (request) =>
          memoryOf(request).some((m) => m.role === 'tool')
            ? `Done for ${key}.`
            : { toolCalls: [{ name: 'lookup', arguments: { query: key } }] },
        ),
      ),
    );
    const runs = await Promise.all(
      chats.map((chat, i) => chat.run(`Look it up ${tag(['one', 'two', 'three'][i])}`)),
    );
    for (const [i, { turnId, finish, events }] of runs.entries()) {
      expect(finish.status).toBe('completed');
      expect(events.map((e) => e.data.type)).toEqual(
        expect.arrayContaining(['turn_started', 'block_finished']),
      );
      const blocks = (await chats[i].messages(turnId)).flatMap((m) => m.blocks);
      expect(blocks.map((b) => b.kind)).toEqual(expect.arrayContaining(['tool_use', 'tool_result', 'text']));
      expect(await chats[i].violations(turnId)).toEqual([]);
    }
  });

  it('takes an upload, reads it in the ingest worker, and a turn reads it', async () => {
    const chat = await conversation('upload', () => 'Read it.');
    const form = new FormData();
    form.append('conversationId', chat.id);
    form.append(
      'file',
      new Blob(['Cluster notes: the slots are shared among three masters.\n']),
      'notes.txt',
    );
    const uploaded = await fetch(`${portal.baseURL}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${E2E_KEYS.alice}` },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const attachmentId = ((await uploaded.json()) as { id: string }).id;
    const progress = await chat.events.waitFor(
      (e) =>
        e.data.type === 'attachment_progress' &&
        e.data.attachment.id === attachmentId &&
        e.data.attachment.status === 'finished',
      { timeoutMs: 30_000 },
    );
    expect(progress.data.attachment).toMatchObject({ pagesRead: 1, chars: expect.any(Number) });

    const res = await chat.post({
      text: `What do the notes say? ${tag('upload')}`,
      attachmentIds: [attachmentId],
    });
    expect(res.status).toBe(202);
    expect((await chat.finished(res.body.turnId)).data.status).toBe('completed');
  });

  it('compacts mid-turn (AUTO): the orchestrator waits for the compaction-worker through the queue', async () => {
    const chat = await conversation('auto', (request) =>
      memoryOf(request).some((m) => contentText(m.content).includes('Summary of earlier conversation'))
        ? 'Done after the summary.'
        : { toolCalls: [{ name: 'lookup', arguments: { query: `page ${memoryOf(request).length}` } }] },
    );
    const { turnId, finish, events } = await chat.run(`Read every page ${tag('auto')}`);
    expect(finish.status).toBe('completed');
    const block = events.find((e) => e.data.type === 'compaction_finished')?.data.block;
    expect(block).toMatchObject({ kind: 'compaction', trigger: 'AUTO' });
    expect(await chat.violations(turnId)).toEqual([]);
  });

  it("kept the queues, every conversation's event stream and the rate limit's counter in the cluster", async () => {
    const redis = new RedisConnections({ clusterNodes: cluster.nodes });
    try {
      const client = redis.shared('state');
      for (const chat of conversations)
        expect(await client.exists(conversationEventsKey(portal.prefix, ConversationId(chat.id)))).toBe(1);
      const keys = (await Promise.all((await redisMasters(client)).map((node) => node.keys('*')))).flat();
      for (const queue of [QueueName.Turns, QueueName.Attachments, QueueName.Compactions])
        expect(keys.some((key) => key.startsWith(`${queueKeyPrefix(portal.prefix, queue)}:${queue}:`))).toBe(
          true,
        );
      // Each request was counted there (a limiter that cannot reach Redis lets requests through).
      expect(keys.some((key) => key.startsWith(`${portal.prefix}:rate-limit:`))).toBe(true);
    } finally {
      await redis.close();
    }
  });
});
