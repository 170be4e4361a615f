import { Worker } from 'bullmq';
import { QueueName } from '@portal/contracts';
import { PromptInputLoader } from '@portal/application';
import { ConversationRepository, TurnEntity, TurnLeaseRepository } from '@portal/dal';
import { checkTurn, ConversationId, type TextBlock, TurnId } from '@portal/domain';
import { lastValueFrom } from 'rxjs';
import { BullMqClient, JOB_OPTIONS, JobRecord, queueKeyPrefix } from '@portal/queue';
import { fakeError, jobContext } from '@portal/testing';
import { ORG, startHarness, transcriptOf, type Harness } from '../../test/turn.harness';
import { RunTurnHandler } from './run-turn.handler';
import { TurnHandedBackError } from './turn-runner.service';
import { TurnReconciler } from './turn-reconciler.service';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.close();
});

const LONG = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('model errors', () => {
  it('retries a 429 after the retry-after the provider asked for, then succeeds', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    h.waits.length = 0;
    h.fake.enqueue(fakeError(429, 'Slow down', { headers: { 'retry-after': '7' } }), 'After the wait.');
    await h.run(turnId);
    expect(h.waits).toEqual([7000]);
    expect(h.turnCalls(mark)).toHaveLength(2);
    expect(await h.turn(turnId)).toMatchObject({ status: 'completed' });
    expect((await h.usage(turnId)).filter((u) => u.kind === 'turn')).toHaveLength(1);
  });

  it('cuts the turn off with the reason once 5xx answers use up the retries, keeping what it ran', async () => {
    const { turnId, conversationId } = await h.openTurn();
    const mark = h.fake.requests.length;
    h.waits.length = 0;
    h.fake.enqueue(
      { text: 'Looking it up.', toolCalls: [{ name: 'read_tool_result', arguments: { ref: 'tr_gone' } }] },
      fakeError(500, 'Boom'),
      fakeError(502, 'Boom'),
      fakeError(500, 'Boom again'),
    );
    await h.run(turnId);
    expect(h.turnCalls(mark)).toHaveLength(4);
    expect(h.waits).toHaveLength(2);
    const turn = await h.turn(turnId);
    expect(turn).toMatchObject({ status: 'cut_off' });
    expect(turn!.error).toMatch(/^model_error: HTTP 500 after 3 attempts: .*Boom again/);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text', 'text', 'tool_use', 'tool_result']);
    expect((await h.events(conversationId)).find((e) => e.type === 'turn_finished')).toEqual({
      type: 'turn_finished',
      turnId,
      status: 'cut_off',
      error: turn!.error,
    });
    await expectValid(turnId);

    // The next turn's memory replays the cut-off turn's call and its result.
    const next = await h.openTurn({ conversationId, text: 'Go on.' });
    const before = h.fake.requests.length;
    h.fake.enqueue('Going on.');
    await h.run(next.turnId);
    expect(transcriptOf(h.turnCalls(before)[0])).toContain('No tool result ref:tr_gone');
  });

  it('calls again when the model answers with neither text nor a tool call', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    const usage = (prompt_tokens: number) => ({ prompt_tokens, completion_tokens: 1 });
    h.fake.enqueue(
      { text: '', usage: usage(11) },
      { reasoning: 'Thinking only.', usage: usage(12) },
      { text: 'The real answer.', usage: usage(13) },
    );
    await h.run(turnId);
    expect(h.turnCalls(mark)).toHaveLength(3);
    expect(await h.turn(turnId)).toMatchObject({ status: 'completed', error: null, contextTokens: 13 });
    // Each call the provider answered leaves its usage row, the empty ones too.
    const rows = (await h.usage(turnId)).filter((u) => u.kind === 'turn');
    expect(rows.map((u) => u.inputTokens)).toEqual([11, 12, 13]);
    const texts = (await h.blocks(turnId)).flatMap((b) => (b.kind === 'text' ? [b.text] : []));
    expect(texts).toEqual(['Hello?', 'The real answer.']);
    await expectValid(turnId);
  });

  it('cuts the turn off, never completing it, when every reply is empty', async () => {
    const { turnId } = await h.openTurn();
    h.fake.enqueue({ text: '' }, { text: '' }, { text: '' });
    await h.run(turnId);
    const turn = await h.turn(turnId);
    expect(turn).toMatchObject({ status: 'cut_off' });
    expect(turn!.error).toMatch(/^model_error: empty reply after 3 attempts: .*neither text nor a tool call/);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text']);
    await expectValid(turnId);
  });

  it('drops what a broken stream sent and calls again', async () => {
    const { turnId } = await h.openTurn();
    h.fake.enqueue({ text: 'This stream will break soon', breakAfterChunks: 3 }, 'The whole answer.');
    await h.run(turnId);
    const blocks = await h.blocks(turnId);
    expect(blocks.filter((b) => b.kind === 'text').map((b) => (b as TextBlock).text)).toEqual([
      'Hello?',
      'The whole answer.',
    ]);
    expect((await h.turn(turnId))!.status).toBe('completed');
  });

  // A context overflow compacts: turn-compaction.int-spec.ts.
  it('does not retry a request the provider refuses', async () => {
    const refused = await h.openTurn();
    h.fake.enqueue(fakeError(401, 'Bad key'));
    await h.run(refused.turnId);
    expect((await h.turn(refused.turnId))!.error).toBe('model_error: HTTP 401: 401 Bad key');
  });
});

describe('cancel', () => {
  it('cuts a streaming answer off, keeping the text that had arrived', async () => {
    const { turnId, conversationId } = await h.openTurn();
    h.fake.enqueue({ text: LONG, chunkSize: 6, delayMs: 15 });
    const running = h.run(turnId);
    await h.waitForEvent(conversationId, (e) => e.type === 'text_delta');
    await h.cancel(turnId);
    await running;

    expect((await h.turn(turnId))!.status).toBe('cut_off');
    const text = (await h.blocks(turnId)).at(-1) as TextBlock;
    expect(text.kind).toBe('text');
    expect(text.text.length).toBeGreaterThan(0);
    expect(text.text.length).toBeLessThan(LONG.length);
    expect(LONG.startsWith(text.text)).toBe(true);
    expect((await h.events(conversationId)).find((e) => e.type === 'turn_finished')).toEqual({
      type: 'turn_finished',
      turnId,
      status: 'cut_off',
    });
    await expectValid(turnId);
  });

  it('cuts a queued turn off without calling the model', async () => {
    const { turnId } = await h.openTurn();
    const mark = h.fake.requests.length;
    await h.cancel(turnId);
    await h.run(turnId);
    expect((await h.turn(turnId))!.status).toBe('cut_off');
    expect(h.turnCalls(mark)).toHaveLength(0);
  });
});

describe('shutdown and recovery', () => {
  it('hands a turn back on shutdown; the next run finishes it without duplicates', async () => {
    const { turnId, conversationId } = await h.openTurn();
    h.fake.enqueue({ text: LONG, chunkSize: 6, delayMs: 15 });
    const shutdown = new AbortController();
    const running = h.run(turnId, shutdown.signal);
    await h.waitForEvent(conversationId, (e) => e.type === 'text_delta');
    shutdown.abort();
    await expect(running).rejects.toBeInstanceOf(TurnHandedBackError);

    const row = await h.db.dataSource.getRepository(TurnEntity).findOneByOrFail({ id: turnId });
    expect(row).toMatchObject({ status: 'running', leaseOwner: null, leaseExpiresAt: null });
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text']);

    h.fake.enqueue('Finished elsewhere.');
    await h.run(turnId);
    const blocks = await h.blocks(turnId);
    expect(blocks.map((b) => (b as TextBlock).text)).toEqual(['Hello?', 'Finished elsewhere.']);
    expect((await h.usage(turnId)).filter((u) => u.kind === 'turn')).toHaveLength(1);
    expect((await h.turn(turnId))!.status).toBe('completed');
  });

  it('cuts a turn off, keeping what it wrote, when its job fails its last attempt; turn 1 is still named', async () => {
    const { turnId, conversationId } = await h.openTurn();
    // Postgres drops the connection on every attempt of this job.
    const dropped = new Error('Connection terminated unexpectedly');
    const loader = h.app.get(PromptInputLoader);
    // The first call's input comes with the claim (`loadFrom`); a later attempt's is read (`load`).
    const loads = [
      jest.spyOn(loader, 'loadFrom').mockRejectedValue(dropped),
      jest.spyOn(loader, 'load').mockRejectedValue(dropped),
    ];
    const handler = h.app.get(RunTurnHandler);
    const queue = h.app.get(BullMqClient).queue(QueueName.Turns);
    const attempt = (attemptsMade: number) =>
      handler.handle(
        { orgId: ORG, turnId: TurnId(turnId) },
        jobContext(queue, { id: `run-turn:${turnId}:open`, attemptsMade }),
      );
    try {
      await expect(attempt(0)).rejects.toThrow('Connection terminated unexpectedly');
      expect((await h.turn(turnId))!.status).toBe('running');
      await expect(attempt(JOB_OPTIONS[QueueName.Turns].attempts! - 1)).rejects.toThrow();
    } finally {
      for (const load of loads) load.mockRestore();
    }
    expect(await h.turn(turnId)).toMatchObject({
      status: 'cut_off',
      error: 'out_of_attempts: Connection terminated unexpectedly',
    });
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text']);
    expect((await h.events(conversationId)).find((e) => e.type === 'turn_finished')).toMatchObject({
      status: 'cut_off',
    });
    expect(
      (await new ConversationRepository(h.db.dataSource).get(ORG, ConversationId(conversationId)))!.title,
    ).toBe('Test title');
  });

  it('the reconciler cuts off a stranded turn whose job ran out of attempts instead of running it again', async () => {
    const { turnId } = await h.openTurn();
    await new TurnLeaseRepository(h.db.dataSource).claim(ORG, TurnId(turnId), 'dead-worker', -1000);
    // Its workers died past BullMQ's stall limit: the job failed for good.
    const connection = h.redis.duplicate({ maxRetriesPerRequest: null });
    const prefix = queueKeyPrefix(h.config.prefix, QueueName.Turns);
    const worker = new Worker(
      QueueName.Turns,
      () => Promise.reject(new Error('job stalled more than allowable limit')),
      { connection, prefix },
    );
    const failed = new Promise((resolve) => worker.once('failed', resolve));
    await h.app
      .get(BullMqClient)
      .queue(QueueName.Turns)
      .add('run-turn', { orgId: ORG, turnId }, { jobId: `run-turn:${turnId}:open`, attempts: 1 });
    await failed;
    await worker.close();
    connection.disconnect();

    const enqueued = await h.app.get(TurnReconciler).reconcile({ idleMs: 0 });
    expect(enqueued).not.toContain(turnId);
    expect(await h.turn(turnId)).toMatchObject({
      status: 'cut_off',
      error: 'out_of_attempts: job stalled more than allowable limit',
    });
  });

  it('the reconciler re-enqueues stranded turns once Redis lost their jobs, once, and a worker finishes them', async () => {
    const queues = h.app.get(BullMqClient);
    const reconciler = h.app.get(TurnReconciler);
    const queued = await h.openTurn();
    const record = new JobRecord(
      { orgId: ORG, turnId: TurnId(queued.turnId) },
      { jobId: `run-turn:${queued.turnId}:open` },
    );
    await lastValueFrom(queues.emit(QueueName.Turns, record));
    const abandoned = await h.openTurn();
    await new TurnLeaseRepository(h.db.dataSource).claim(ORG, TurnId(abandoned.turnId), 'dead-worker', -1000);

    const keys = await h.redis.keys(`${queueKeyPrefix(h.config.prefix, QueueName.Turns)}*`);
    expect(keys.length).toBeGreaterThan(0);
    await h.redis.del(...keys);

    const enqueued = await reconciler.reconcile({ idleMs: 0 });
    expect(enqueued).toEqual(expect.arrayContaining([queued.turnId, abandoned.turnId]));
    expect(await reconciler.reconcile({ idleMs: 0 })).toEqual([]);
    const waiting = await queues.queue(QueueName.Turns).getJobs(['waiting']);
    expect(waiting.filter((j) => j.data.turnId === queued.turnId).map((j) => j.id)).toEqual([
      `run-turn:${queued.turnId}:recover`,
    ]);

    await h.startWorker();
    for (const { turnId } of [queued, abandoned]) {
      for (let i = 0; i < 500 && (await h.turn(turnId))!.status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect((await h.turn(turnId))!.status).toBe('completed');
    }
  });
});
