import { randomUUID } from 'node:crypto';
import type { INestMicroservice } from '@nestjs/common';
import { QueueEvents } from 'bullmq';
import IORedis from 'ioredis';
import { QueueName, type JobData, readRedisUrl } from '@portal/contracts';
import { RedisConnections, ConversationEvents } from '@portal/redis';
import { CompactionClient, CompactionError, CompactionRequests } from '@portal/application';
import {
  AgentRepository,
  BlockRepository,
  ConversationRepository,
  OrgRepository,
  ToolResultRepository,
  TurnLeaseRepository,
  TurnRepository,
  UsageRepository,
  UserRepository,
  type NewBlock,
} from '@portal/dal';
import { bulkTurns } from '@portal/dal/testing';
import {
  AgentId,
  checkTurn,
  type CompactionBlock,
  ConversationId,
  OrgId,
  type Turn,
  TurnId,
  type TurnStatus,
  UserId,
} from '@portal/domain';
import { priceUsage, type ModelEntry } from '@portal/model';
import {
  leftOutRequests,
  projectTokens,
  requestsShare,
  resolveLimits,
  summaryNote,
  summaryPromptBudget,
  textTokens,
  type ChatRequest,
} from '@portal/prompt';
import { BullMqClient, createQueueMicroservice, queueKeyPrefix } from '@portal/queue';
import {
  createTestDatabase,
  deleteRedisPrefix,
  fakeError,
  jobContext,
  startFakeOpenAI,
  type FakeOpenAI,
  type TestDatabase,
} from '@portal/testing';
import { AppModule } from './app.module';
import { CompactHandler } from './compact.handler';

const ORG = OrgId('acme');
const MODEL: ModelEntry = {
  id: 'fake-model',
  model: 'fake-model',
  baseURL: 'set in beforeAll',
  contextWindow: 100_000,
  vision: null,
  reasoning: false,
  price: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
};
/** A small window, so a conversation of a few hundred turns is past what the summary prompt holds. */
const SMALL: ModelEntry = { ...MODEL, id: 'small-model', model: 'small-model', contextWindow: 8_000 };
const redisUrl = readRedisUrl(process.env);
const prefix = `test-cw-${randomUUID().slice(0, 8)}`;

let db: TestDatabase;
let fake: FakeOpenAI;
let app: INestMicroservice;
let queues: BullMqClient;
let events: ConversationEvents;
let queueEvents: QueueEvents;
const eventsConnection = new IORedis(redisUrl, { maxRetriesPerRequest: null });
let requests: CompactionRequests;
let client: CompactionClient;
const redis = new IORedis(redisUrl);

beforeAll(async () => {
  db = await createTestDatabase();
  fake = await startFakeOpenAI();
  MODEL.baseURL = fake.baseURL;
  SMALL.baseURL = fake.baseURL;
  const ds = db.dataSource;
  await new OrgRepository(ds).upsert(ORG);
  await new UserRepository(ds).upsert(ORG, UserId('alice'), 'member');
  await new AgentRepository(ds).upsert(ORG, {
    id: AgentId('analyst'),
    name: 'Analyst',
    instructions: 'Analyse.',
    model: MODEL.id,
    effort: 'medium',
    tools: [],
    reviewer: null,
    compactionGuidance: 'Keep every figure in the Facts.',
  });
  await new AgentRepository(ds).upsert(ORG, {
    id: AgentId('brief'),
    name: 'Brief',
    instructions: 'Be brief.',
    model: SMALL.id,
    effort: 'low',
    tools: [],
    reviewer: null,
    compactionGuidance: null,
  });
  app = await createQueueMicroservice(
    AppModule.forRoot({
      databaseUrl: db.url,
      databasePoolSize: 4,
      redis: { url: redisUrl },
      eventRetentionMs: 3_600_000,
      prefix,
      healthPort: 0,
      logLevel: 'silent',
      shutdownDeadlineMs: 1000,
      env: {},
      models: [MODEL, SMALL],
      limits: resolveLimits(),
    }),
    { queues: [QueueName.Compactions], logger: false },
  );
  await app.listen();
  queues = app.get(BullMqClient);
  // On the app's connections: closed with it.
  const connections = app.get(RedisConnections);
  events = new ConversationEvents(connections, prefix);
  requests = new CompactionRequests(ds, queues, events);
  client = new CompactionClient(ds, queues, { redis: connections, prefix, timeoutMs: 20_000 });
  queueEvents = new QueueEvents(QueueName.Compactions, {
    connection: eventsConnection,
    prefix: queueKeyPrefix(prefix, QueueName.Compactions),
  });
  await queueEvents.waitUntilReady();
});

afterAll(async () => {
  await client.close();
  await queueEvents.close();
  eventsConnection.disconnect();
  await app.close();
  await fake.close();
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
  await db.drop();
});

// --- Fixtures ------------------------------------------------------------------------------------

const turns = () => new TurnRepository(db.dataSource);
const blocks = () => new BlockRepository(db.dataSource);
const text = (t: string): NewBlock => ({ kind: 'text', text: t, narration: false, steering: false });

async function conversation(): Promise<string> {
  return (await new ConversationRepository(db.dataSource).create(ORG, UserId('alice'), AgentId('analyst')))!
    .id;
}

/** A turn with the person's text and an assistant message of `assistant` blocks, in `status`. */
async function addTurn(
  conversationId: string,
  said: string,
  assistant: (turnId: string) => Promise<NewBlock[]> | NewBlock[],
  status: TurnStatus = 'completed',
): Promise<Turn> {
  const { turn } = (await turns().createWithUserMessage(ORG, {
    conversationId: ConversationId(conversationId),
    effort: 'medium',
    model: MODEL.id,
    text: said,
  }))!;
  await new TurnLeaseRepository(db.dataSource).claim(ORG, turn.id, 'orchestrator', 60_000);
  const written = await assistant(turn.id);
  if (written.length > 0) {
    await blocks().append(ORG, turn.id, written);
  }
  if (status !== 'running') await turns().updateStatus(ORG, turn.id, status);
  return (await turns().get(ORG, turn.id))!;
}

/** Turn 1 reads the report (a stored tool result), turn 2 asks with a skill slug. */
async function twoTurns(conversationId: string): Promise<{ ref: string }> {
  let ref = '';
  await addTurn(conversationId, 'Find the Q3 revenue in the report.', async (turnId) => {
    ref = (
      await new ToolResultRepository(db.dataSource).save(ORG, {
        turnId: TurnId(turnId),
        callId: 'c1',
        content: 'Q3 revenue: $4.2M',
      })
    ).ref;
    return [
      { kind: 'tool_use', callId: 'c1', name: 'search_attachments', arguments: '{"query":"Q3 revenue"}' },
      { kind: 'tool_result', callId: 'c1', outcome: 'ok', content: 'Q3 revenue: $4.2M', ref },
      text('Q3 revenue was $4.2M.'),
    ];
  });
  await addTurn(conversationId, '/market-research Compare it with Q2.', () => [text('Q2 was $3.9M.')]);
  return { ref };
}

/** Two turns and a `/compact` turn after them, queued but not enqueued: the test runs its job. */
async function compactionTurn(): Promise<Turn> {
  const id = await conversation();
  await twoTurns(id);
  const { turn } = (await turns().createWithUserMessage(ORG, {
    conversationId: ConversationId(id),
    kind: 'compaction',
    effort: 'low',
    model: MODEL.id,
    text: '/compact',
  }))!;
  return turn;
}

async function finished(jobId: string): Promise<void> {
  const job = await queues.queue(QueueName.Compactions).getJob(jobId);
  await job!.waitUntilFinished(queueEvents, 20_000);
}

const eventTypes = async (conversationId: string) =>
  (await events.readAfter(ConversationId(conversationId), '0-0')).map((e) => e.event);

/** `/compact` opened and run on `model`: the compaction block of its turn. */
async function manualCompaction(conversationId: string, model: ModelEntry): Promise<CompactionBlock> {
  const opened = await requests.open(ORG, {
    conversationId: ConversationId(conversationId),
    text: '/compact',
    effort: 'low',
    model: model.id,
  });
  await finished(opened.jobId);
  return (await blocks().listTurnMessages(ORG, opened.turn.id))[1].blocks[0] as CompactionBlock;
}

const lastRequest = () => fake.requests.at(-1)!.body;
const context = () => jobContext(queues.queue(QueueName.Compactions), { id: `direct-${randomUUID()}` });

// --- Manual -------------------------------------------------------------------------------------

describe('manual /compact through the compact handler', () => {
  it('writes the block and the portal line, completes the turn, prices the call at the turn model', async () => {
    const id = await conversation();
    const { ref } = await twoTurns(id);
    // The model leaves out turn 2's request; the worker restores it.
    fake.enqueue({
      text: `Summary of turns 1–2\n\n## Requests\n- Turn 1: Find the Q3 revenue in the report.\n\n## Decisions\n- none\n\n## Work done\n- none\n\n## Open work\n- none\n\n## Facts\n- Q3 revenue was $4.2M (ref:${ref})`,
      usage: { prompt_tokens: 1000, completion_tokens: 200, cached_tokens: 100 },
    });
    const opened = await requests.open(ORG, {
      conversationId: ConversationId(id),
      text: '/compact keep the figures exact',
      effort: 'medium',
      model: MODEL.id,
    });
    await finished(opened.jobId);

    const turn = (await turns().get(ORG, opened.turn.id))!;
    expect(turn).toMatchObject({
      n: 3,
      kind: 'compaction',
      status: 'completed',
      contextTokens: null,
      error: null,
    });
    const messages = await blocks().listTurnMessages(ORG, turn.id);
    expect(messages.map((m) => [m.role, m.blocks.map((b) => [b.seq, b.kind])])).toEqual([
      ['user', [[1, 'text']]],
      [
        'assistant',
        [
          [2, 'compaction'],
          [3, 'text'],
        ],
      ],
    ]);
    const [block, line] = messages[1].blocks as [CompactionBlock, { text: string }];
    expect(block).toMatchObject({ trigger: 'MANUAL', coversTurns: { from: 1, to: 2 } });
    expect(block.summary.startsWith('Summary of turns 1–2\n')).toBe(true);
    expect(block.summary).toContain(`(ref:${ref})`);
    expect(block.summary.split('## Decisions')[0]).toContain('- Turn 2: Compare it with Q2.');
    expect(line.text).toBe('Context summarised: turns 1–2.');
    expect(checkTurn({ turn, messages })).toEqual([]);

    const usage = { inputTokens: 1000, outputTokens: 200, cachedTokens: 100 };
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, turn.id)).toEqual([
      { turnId: turn.id, kind: 'compaction', model: MODEL.id, ...usage, cost: priceUsage(MODEL, usage) },
    ]);

    const body = lastRequest();
    expect(body.model).toBe('fake-model');
    expect(body.tools).toBeUndefined();
    expect(body.messages[0].content).toContain(
      'Instructions from the person for this summary:\nkeep the figures exact',
    );
    expect(body.messages[0].content).toContain('Keep every figure in the Facts.');
    expect(body.messages[1].content).toContain(`Result of c1 (ref:${ref}): Q3 revenue: $4.2M`);

    const seen = await eventTypes(id);
    expect(seen.map((e) => e.type)).toEqual([
      'turn_started',
      'block_finished',
      'turn_state',
      'turn_state',
      'compaction_started',
      'compaction_finished',
      'block_finished',
      'usage',
      'turn_state',
      'turn_finished',
    ]);
    expect(seen.slice(-2)).toEqual([
      { type: 'turn_state', turnId: turn.id, status: 'completed' },
      { type: 'turn_finished', turnId: turn.id, status: 'completed' },
    ]);
    expect(seen[5]).toMatchObject({ block: { id: block.id, kind: 'compaction' } });
  });

  it('fails the turn with a clear error when the model fails, writing nothing', async () => {
    const id = await conversation();
    await twoTurns(id);
    fake.enqueue(fakeError(401, 'Incorrect API key provided'));
    const opened = await requests.open(ORG, {
      conversationId: ConversationId(id),
      text: '/compact',
      effort: 'low',
      model: MODEL.id,
    });
    await expect(finished(opened.jobId)).rejects.toThrow(
      'The summary call to fake-model failed (fatal): 401 Incorrect API key provided',
    );
    const turn = (await turns().get(ORG, opened.turn.id))!;
    expect(turn.status).toBe('failed');
    expect(turn.error).toBe(
      'compaction_failed: The summary call to fake-model failed (fatal): 401 Incorrect API key provided',
    );
    expect((await blocks().listTurnMessages(ORG, turn.id)).map((m) => m.role)).toEqual(['user']);
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, turn.id)).toEqual([]);
    expect((await eventTypes(id)).slice(-2)).toEqual([
      { type: 'turn_state', turnId: turn.id, status: 'failed' },
      { type: 'turn_finished', turnId: turn.id, status: 'failed', error: turn.error },
    ]);
  });

  it('is idempotent: a run again after the block was written settles without a second call or block', async () => {
    const turn = await compactionTurn();
    const data: JobData<'compact'> = {
      orgId: ORG,
      turnId: turn.id,
      trigger: 'MANUAL',
      requestId: 'manual-1',
    };
    fake.enqueue(
      'Summary of turns 1–2\n\n## Requests\n- Turn 1: Find the Q3 revenue in the report.\n- Turn 2: Compare it with Q2.',
    );
    const calls = fake.requests.length;
    const handler = app.get(CompactHandler);
    await handler.handle(data, context());
    // As if the worker had died before settling: running, lease lapsed.
    await db.dataSource.query(
      `UPDATE turns SET status = 'running', lease_owner = 'dead', lease_expires_at = now() - interval '1 second' WHERE id = $1`,
      [turn.id],
    );
    await handler.handle(data, context());
    await handler.handle(data, context());

    expect(fake.requests.length).toBe(calls + 1);
    expect((await turns().get(ORG, turn.id))!.status).toBe('completed');
    const kinds = (await blocks().listTurnMessages(ORG, turn.id)).flatMap((m) => m.blocks.map((b) => b.kind));
    expect(kinds).toEqual(['text', 'compaction', 'text']);
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, turn.id)).toHaveLength(1);
  });
});

describe('the block rules on append (SPEC 8)', () => {
  const pending: NewBlock = {
    kind: 'clarification_request',
    callId: 'c1',
    question: 'Which year?',
    options: [],
    answer: null,
  };
  const kindsOf = async (turnId: string) =>
    (await blocks().listTurnMessages(ORG, TurnId(turnId))).flatMap((m) => m.blocks.map((b) => b.kind));

  it('MANUAL: a block that breaks a rule is refused, nothing written, the turn failed invariant_violated', async () => {
    const turn = await compactionTurn();
    // A pending request, which only the last block of a turn may be (invariant 5).
    await blocks().append(ORG, turn.id, [pending]);
    fake.enqueue('Summary of turns 1–2\n\n## Requests\n- Turn 1: Find the Q3 revenue in the report.');
    const data: JobData<'compact'> = { orgId: ORG, turnId: turn.id, trigger: 'MANUAL', requestId: 'manual' };

    await expect(app.get(CompactHandler).handle(data, context())).rejects.toThrow(/^invariant_violated: /);
    const failed = (await turns().get(ORG, turn.id))!;
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/^invariant_violated: .*must be the last block of the turn/);
    expect(await kindsOf(turn.id)).toEqual(['text', 'clarification_request']);
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, turn.id)).toEqual([]);
  });

  it('AUTO: a block that breaks a rule is refused and nothing is written', async () => {
    const id = await conversation();
    await twoTurns(id);
    const running = await addTurn(id, 'Which year?', () => [pending], 'running');
    fake.enqueue('Summary of turns 1–3\n\n## Requests\n- Turn 1: Find the Q3 revenue in the report.');

    await expect(client.compact(ORG, running.id, { requestId: 'auto-bad' })).rejects.toThrow(
      /invariant_violated/,
    );
    expect(await kindsOf(running.id)).toEqual(['text', 'clarification_request']);
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, running.id)).toEqual([]);
  });
});

// --- Auto ---------------------------------------------------------------------------------------

describe('AUTO through CompactionClient', () => {
  it('appends the block to the running turn at the next seq and hands it to the waiting caller', async () => {
    const id = await conversation();
    await twoTurns(id);
    const running = await addTurn(
      id,
      'Now draft the memo to /memos/q3.md',
      () => [
        { kind: 'tool_use', callId: 'c9', name: 'write_file', arguments: '{"path":"/memos/q3.md"}' },
        { kind: 'tool_result', callId: 'c9', outcome: 'ok', content: 'written', ref: null },
      ],
      'running',
    );
    await turns().setContextTokens(ORG, running.id, 85_000);
    fake.enqueue({
      text: 'Summary of turns 1–3\n\n## Requests\n- Turn 1: Find the Q3 revenue in the report.',
      usage: { prompt_tokens: 900, completion_tokens: 90 },
    });

    const block = await client.compact(ORG, running.id, { requestId: 'auto-1' });

    expect(block).toMatchObject({
      kind: 'compaction',
      trigger: 'AUTO',
      coversTurns: { from: 1, to: 3 },
      seq: 4,
    });
    const messages = await blocks().listTurnMessages(ORG, running.id);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(messages[1].blocks.at(-1)).toEqual(block);
    for (const request of ['Compare it with Q2.', 'Now draft the memo to /memos/q3.md'])
      expect(block.summary).toContain(request);
    const turn = (await turns().get(ORG, running.id))!;
    expect(turn).toMatchObject({ status: 'running', contextTokens: 85_000 });
    expect(checkTurn({ turn: { ...turn, status: 'running' }, messages })).toEqual([]);
    const usage = await new UsageRepository(db.dataSource).listForTurn(ORG, running.id);
    expect(usage).toEqual([
      expect.objectContaining({ kind: 'compaction', model: MODEL.id, inputTokens: 900 }),
    ]);
    expect((await eventTypes(id)).map((e) => e.type)).toEqual([
      'compaction_started',
      'compaction_finished',
      'usage',
    ]);
  });

  it('opens an assistant message when the turn has none yet, and is idempotent per request', async () => {
    const id = await conversation();
    await twoTurns(id);
    const running = await addTurn(id, 'A long question', () => [], 'running');
    fake.enqueue('Summary of turns 1–3\n\n## Requests\n- Turn 3: A long question');
    const calls = fake.requests.length;
    const first = await client.compact(ORG, running.id, { requestId: 'again' });
    const second = await client.compact(ORG, running.id, { requestId: 'again' });
    // A job run twice, straight through the handler.
    await app
      .get(CompactHandler)
      .handle({ orgId: ORG, turnId: running.id, trigger: 'AUTO', requestId: 'again' }, context());
    expect(second).toEqual(first);
    expect(fake.requests.length).toBe(calls + 1);
    const messages = await blocks().listTurnMessages(ORG, running.id);
    expect(messages.map((m) => [m.role, m.blocks.map((b) => b.kind)])).toEqual([
      ['user', ['text']],
      ['assistant', ['compaction']],
    ]);
    expect(await new UsageRepository(db.dataSource).listForTurn(ORG, running.id)).toHaveLength(1);
  });

  it('throws a clear CompactionError when the model keeps failing, the job failed after its retries', async () => {
    const id = await conversation();
    await twoTurns(id);
    const running = await addTurn(id, 'Go on.', () => [], 'running');
    fake.enqueue(
      fakeError(500, 'upstream down'),
      fakeError(500, 'upstream down'),
      fakeError(500, 'upstream down'),
    );
    const err = await client.compact(ORG, running.id, { requestId: 'failing' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CompactionError);
    expect((err as Error).message).toBe(
      `Compaction of turn ${running.id} failed: The summary call to fake-model failed (server): 500 upstream down`,
    );
    const job = await queues.queue(QueueName.Compactions).getJob(`compact:${running.id}:failing`);
    expect(job).toBeUndefined(); // removed, so the same request may be asked again
    expect(fake.pending()).toBe(0);
    expect((await blocks().listTurnMessages(ORG, running.id)).map((m) => m.role)).toEqual(['user']);
    expect((await turns().get(ORG, running.id))!.status).toBe('running');
  });

  it('refuses a turn that is not running', async () => {
    const id = await conversation();
    const done = await addTurn(id, 'Done already.', () => [text('ok')]);
    await expect(client.compact(ORG, done.id)).rejects.toThrow(/is a completed turn, not a running turn/);
  });
});

describe('a second compaction', () => {
  const FIRST_REQUESTS =
    '## Requests\n- Turn 1: Find the Q3 revenue in the report.\n- Turn 2: Compare it with Q2.';

  /** Two turns, then their `/compact` with the model answering `summary`: the compaction block. */
  async function compactTwoTurns(id: string, summary: string): Promise<CompactionBlock> {
    await twoTurns(id);
    fake.enqueue(summary);
    return manualCompaction(id, MODEL);
  }

  it('carries the first summary by its note and covers turns 1–N', async () => {
    const id = await conversation();
    const first = await compactTwoTurns(
      id,
      `Summary of turns 1–2\n\n${FIRST_REQUESTS}\n\n## Facts\n- FIRST_FACT`,
    );

    await addTurn(id, 'Turn four asks for the Q4 outlook.', () => [text('Q4 looks flat.')]);
    const running = await addTurn(id, 'Turn five drafts the board memo.', () => [], 'running');
    // No opening line: the worker adds it.
    fake.enqueue(`${FIRST_REQUESTS}\n\n## Facts\n- FIRST_FACT`);
    const second = await client.compact(ORG, running.id);

    const body = lastRequest();
    expect(body.messages[1].content.startsWith(`${summaryNote(first)}\n\n${first.summary}`)).toBe(true);
    expect(body.messages[0].content).toContain(
      `under the note "[Summary of earlier conversation — turns 1–2]"`,
    );
    expect(body.messages[1].content).not.toContain('Context summarised');
    expect(body.messages[1].content).not.toContain('### Turn 3');
    expect(second.coversTurns).toEqual({ from: 1, to: 5 });
    expect(second.summary.startsWith('Summary of turns 1–5\n')).toBe(true);
    for (const request of ['Turn four asks for the Q4 outlook.', 'Turn five drafts the board memo.'])
      expect(second.summary).toContain(request);
  });

  it("keeps the requests of every turn: one the model dropped from the first summary's is restored", async () => {
    const id = await conversation();
    await compactTwoTurns(id, `Summary of turns 1–2\n\n${FIRST_REQUESTS}`);

    const running = await addTurn(id, 'Turn four drafts the board memo.', () => [], 'running');
    // The model keeps only the newest request: the first summary's are gone from its answer.
    fake.enqueue('Summary of turns 1–4\n\n## Requests\n- Turn 4: Turn four drafts the board memo.');
    const second = await client.compact(ORG, running.id);

    const body = lastRequest();
    const listed = (body.messages[1].content as string).split('## Requests to keep')[1];
    for (const request of [
      'Find the Q3 revenue in the report.',
      'Compare it with Q2.',
      'Turn four drafts the board memo.',
    ])
      expect(listed).toContain(`> ${request}`);
    expect(body.messages[0].content).toContain('Its requests are listed again under "Requests to keep"');
    const section = second.summary.split('## Requests')[1];
    expect(section.indexOf('- Turn 1: Find the Q3 revenue in the report.')).toBeGreaterThan(-1);
    expect(section.indexOf('- Turn 2: Compare it with Q2.')).toBeGreaterThan(-1);
  });
});

describe('a long conversation', () => {
  /** Turns 1..length, each the person's question and the answer, written straight in SQL. */
  async function longConversation(length: number): Promise<string> {
    const id = (await new ConversationRepository(db.dataSource).create(
      ORG,
      UserId('alice'),
      AgentId('brief'),
    ))!.id;
    await bulkTurns(db.dataSource, ORG, id, {
      to: length,
      model: SMALL.id,
      person: `format('Question %s: how did region %s do?', t.n, t.n % 7)`,
      answer: `format('Region %s grew %s%%.', t.n % 7, t.n % 13)`,
    });
    return id;
  }

  it('sends a summary prompt within the window less the answer share, the newest turns whole, and keeps what it left out named', async () => {
    const id = await longConversation(1_000);
    fake.enqueue('Summary of turns 1–1000\n\n## Requests\n- none kept by the model');
    const opened = await requests.open(ORG, {
      conversationId: ConversationId(id),
      text: '/compact',
      effort: 'low',
      model: SMALL.id,
    });
    await finished(opened.jobId);

    const body = lastRequest();
    expect(body.model).toBe('small-model');
    const messages = body.messages as ChatRequest['messages'];
    expect(projectTokens({ messages, tools: [] })).toBeLessThanOrEqual(
      summaryPromptBudget(SMALL.contextWindow, resolveLimits()),
    );
    const material = messages[1].content as string;
    const note = /\[Turns 1–(\d+) \(\d+ turns\) are left out for length/.exec(material);
    expect(note).not.toBeNull();
    const first = Number(note![1]) + 1;
    for (let n = first; n <= 1_000; n++) expect(material).toContain(`### Turn ${n}\nPerson: Question ${n}:`);
    expect(material).not.toContain(`### Turn ${first - 1}\n`);

    // The newest requests are quoted, the oldest named by their turns; the summary keeps both.
    const named = /\nTurns 1–(\d+):\n> /.exec(material);
    expect(named).not.toBeNull();
    const range = { from: 1, to: Number(named![1]) };
    const [block] = (await blocks().listTurnMessages(ORG, opened.turn.id))[1].blocks as [CompactionBlock];
    expect(block.coversTurns).toEqual({ from: 1, to: 1_000 });
    expect(block.summary).toContain(`- Turns 1–${range.to}: ${leftOutRequests(range)}`);
    for (let n = range.to + 1; n <= 1_000; n++)
      expect(block.summary).toContain(`- Turn ${n}: Question ${n}:`);
  });

  it('keeps its requests section within the share after a second compaction, the newest requests whole', async () => {
    const id = await longConversation(1_000);
    const compact = async (covered: number) => {
      fake.enqueue(`Summary of turns 1–${covered}\n\n## Requests\n- none kept by the model`);
      return (await manualCompaction(id, SMALL)).summary.split('## Requests')[1];
    };
    const first = await compact(1_000);
    await addTurn(id, 'Question 1002: and the totals?', () => [text('They grew.')]);
    const second = await compact(1_002);

    const share = requestsShare(SMALL.contextWindow, resolveLimits());
    for (const section of [first, second]) expect(textTokens(section)).toBeLessThanOrEqual(share * 1.1);
    // The newest requests, before the first summary too, whole; the oldest named by their turns.
    for (const n of [1_000, 999, 998]) expect(second).toContain(`- Turn ${n}: Question ${n}: how did region`);
    expect(second).toContain('- Turn 1002: Question 1002: and the totals?');
    expect(second).toMatch(/- Turns 1–\d+: \[the requests of turns 1–\d+ are not quoted/);
  });
});
