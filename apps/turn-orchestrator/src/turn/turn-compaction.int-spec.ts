import type { INestMicroservice } from '@nestjs/common';
import { QueueName } from '@portal/contracts';
import { compactionJobId, MANUAL_REQUEST_ID } from '@portal/application';
import { AgentRepository, ConversationRepository, TurnRepository } from '@portal/dal';
import { AgentId, checkTurn, type CompactionBlock, ConversationId } from '@portal/domain';
import { findModel, priceUsage } from '@portal/model';
import { BullMqClient, createQueueMicroservice } from '@portal/queue';
import { fakeContextOverflow, fakeError } from '@portal/testing';
// The compaction-worker runs in this process beside the orchestrator, as it runs beside it in production.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { AppModule as CompactionWorkerModule } from '../../../compaction-worker/src/app.module';
import { addSkill, ORG, skill, startHarness, type Harness, type OpenTurn } from '../../test/turn.harness';
import { TurnReconciler } from './turn-reconciler.service';
import { TurnHandedBackError } from './turn-runner.service';

let h: Harness;
let worker: INestMicroservice;
let tiny: string;
let big: string;

/** Compaction is due from 2,000 projected tokens: the portal floor and tools alone are about 900. */
const SMALL = { id: 'small', contextWindow: 4000, compactAt: 0.5 };
const BIG_RULES = Array.from({ length: 300 }, (_, i) => `Rule ${i + 1}: keep every figure exact.`).join('\n');

beforeAll(async () => {
  h = await startHarness({ models: [SMALL] });
  worker = await createQueueMicroservice(
    CompactionWorkerModule.forRoot({
      ...h.config,
      healthPort: 0,
      models: h.config.catalogue,
      limits: h.config.limits,
    }),
    { queues: [QueueName.Compactions], logger: false },
  );
  await worker.listen();
  await new AgentRepository(h.db.dataSource).upsert(ORG, {
    id: AgentId('auditor'),
    name: 'auditor',
    instructions: 'You are the auditor.',
    model: SMALL.id,
    effort: 'medium',
    tools: [],
    reviewer: null,
    compactionGuidance: null,
  });
  tiny = await addSkill(h, skill('tiny'));
  big = await addSkill(h, skill('big', { instructions: BIG_RULES }));
});
afterAll(async () => {
  await worker?.close();
  await h?.close();
});

const loadSkill = (slug: string) => ({ toolCalls: [{ name: 'load_skill', arguments: { slug } }] });
const summary = (to: number, usage = { prompt_tokens: 700, completion_tokens: 50 }) => ({
  text: `Summary of turns 1–${to}\n\n## Requests\n- (restored by the worker)\n\n## Facts\n- SUMMARY_FACT`,
  usage,
});
/** Requests without tools: the summary calls (and a first turn's title call). */
const summaryCalls = (mark: number) => h.fake.requests.slice(mark).filter((r) => !r.body.tools);
const nonSystem = (request: { body: { messages: { role: string }[] } }) =>
  request.body.messages.filter((m) => m.role !== 'system');

/** A turn of a conversation that has a title already, so no title call follows the turn. */
async function openTitled(o: OpenTurn) {
  const opened = await h.openTurn(o);
  await new ConversationRepository(h.db.dataSource).nameIfUntitled(
    ORG,
    ConversationId(opened.conversationId),
    'Titled',
  );
  return opened;
}

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('AUTO compaction before a call', () => {
  it('compacts at the threshold into the running turn; the next call reads the summary and the tail', async () => {
    const first = await h.openTurn({ agentId: 'auditor', text: 'First question.' });
    h.fake.enqueue('PAST_ANSWER');
    await h.run(first.turnId);

    const { turnId, conversationId } = await h.openTurn({
      agentId: 'auditor',
      conversationId: first.conversationId,
      text: 'Start the audit.',
      catalogueSkillIds: [tiny, big],
    });
    const mark = h.fake.requests.length;
    h.fake.enqueue(
      loadSkill('tiny'),
      { ...loadSkill('big'), usage: { prompt_tokens: 1000, completion_tokens: 5 } },
      summary(2),
      { text: 'Audit done.', usage: { prompt_tokens: 3600, completion_tokens: 3 } },
    );
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({ status: 'completed', error: null, contextTokens: 3600 });
    const messages = await h.messages(turnId);
    expect(messages.map((m) => [m.role, m.blocks.map((b) => b.kind)])).toEqual([
      ['user', ['text']],
      ['assistant', ['tool_use', 'tool_result', 'tool_use', 'tool_result', 'compaction', 'text']],
    ]);
    const block = messages[1].blocks[4] as CompactionBlock;
    expect(block).toMatchObject({ trigger: 'AUTO', coversTurns: { from: 1, to: 2 } });
    expect(block.summary).toContain('SUMMARY_FACT');
    expect(block.summary).toContain('Start the audit.'); // the worker keeps every request

    const calls = h.turnCalls(mark);
    expect(calls).toHaveLength(3);
    expect(summaryCalls(mark)).toHaveLength(1);
    // Before the compaction the call read the past turn and the new message...
    expect(JSON.stringify(calls[1].body.messages)).toContain('PAST_ANSWER');
    // ...after it, the summary and the turn's last four messages: the calls and their results.
    const after = nonSystem(calls[2]);
    expect(after.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(after[0]).toEqual({
      role: 'user',
      content: `[Summary of earlier conversation — turns 1–2]\n\n${block.summary}`,
    });
    expect(JSON.stringify(after)).not.toContain('PAST_ANSWER');
    expect(after[4]).toMatchObject({
      content: expect.stringContaining('Rule 300: keep every figure exact.'),
    });

    const model = findModel(h.config.catalogue, SMALL.id)!;
    const compactionUsage = { inputTokens: 700, outputTokens: 50, cachedTokens: 0 };
    const usage = await h.usage(turnId);
    expect(usage.map((u) => u.kind)).toEqual(['turn', 'turn', 'compaction', 'turn']);
    expect(usage[2]).toEqual({
      turnId,
      kind: 'compaction',
      model: SMALL.id,
      ...compactionUsage,
      cost: priceUsage(model, compactionUsage),
    });

    const events = await h.events(conversationId);
    const types = events.filter((e) => e.turnId === turnId).map((e) => e.type);
    expect(types).toContain('compaction_started');
    expect(events.find((e) => e.type === 'compaction_finished')).toMatchObject({
      turnId,
      block: { id: block.id },
    });
    await expectValid(turnId);
  });

  it('a turn run again after compacting gets the same block back, not a second summary', async () => {
    const { turnId, conversationId } = await openTitled({
      agentId: 'auditor',
      text: `Check these rules.\n${BIG_RULES}`,
    });
    const mark = h.fake.requests.length;
    const long = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    h.fake.enqueue(summary(1), { text: long, chunkSize: 6, delayMs: 15 });
    const shutdown = new AbortController();
    const running = h.run(turnId, shutdown.signal);
    await h.waitForEvent(conversationId, (e) => e.type === 'text_delta');
    shutdown.abort();
    await expect(running).rejects.toBeInstanceOf(TurnHandedBackError);

    h.fake.enqueue('Checked after the restart.');
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({ status: 'completed' });
    expect(summaryCalls(mark)).toHaveLength(1);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text', 'compaction', 'text']);
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['compaction', 'turn']);
    await expectValid(turnId);
  });

  it('goes ahead with the call when the summary fails', async () => {
    const { turnId } = await openTitled({ agentId: 'auditor', text: `Check these rules.\n${BIG_RULES}` });
    const mark = h.fake.requests.length;
    h.fake.enqueue(fakeError(401, 'Bad key'), 'Checked anyway.');
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({ status: 'completed', error: null });
    expect(summaryCalls(mark)).toHaveLength(1);
    expect(h.turnCalls(mark)).toHaveLength(1);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text', 'text']);
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['turn']);
    await expectValid(turnId);
  });
});

describe('a context overflow', () => {
  it('compacts and calls again once', async () => {
    const { turnId, conversationId } = await openTitled({ text: 'Summarise the logs.' });
    const mark = h.fake.requests.length;
    h.fake.enqueue(fakeContextOverflow(), summary(1), {
      text: 'Logs summarised.',
      usage: { prompt_tokens: 900, completion_tokens: 3 },
    });
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({ status: 'completed', error: null, contextTokens: 900 });
    const messages = await h.messages(turnId);
    expect(messages.map((m) => [m.role, m.blocks.map((b) => b.kind)])).toEqual([
      ['user', ['text']],
      ['assistant', ['compaction', 'text']],
    ]);
    const calls = h.turnCalls(mark);
    expect(calls).toHaveLength(2);
    expect(nonSystem(calls[1])).toEqual([
      {
        role: 'user',
        content: expect.stringMatching(
          /^\[Summary of earlier conversation — turns 1–1\]\n\nSummary of turns 1–1\n/,
        ),
      },
    ]);
    expect((await h.usage(turnId)).map((u) => [u.kind, u.model])).toEqual([
      ['compaction', 'gpt-test'],
      ['turn', 'gpt-test'],
    ]);
    // `running` may wait for the turn's next events, but not past the compaction worker's.
    const states = (await h.events(conversationId))
      .filter((e) => e.turnId === turnId && ['turn_state', 'compaction_started'].includes(e.type))
      .map((e) => ('status' in e ? e.status : e.type));
    expect(states).toEqual(['running', 'compaction_started', 'completed']);
    await expectValid(turnId);
  });

  it('fails the turn with the reason when the summary fails', async () => {
    const { turnId } = await openTitled({ text: 'Summarise the logs.' });
    const mark = h.fake.requests.length;
    h.fake.enqueue(fakeContextOverflow(), fakeError(401, 'Bad key'));
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({
      status: 'failed',
      error: 'compaction_failed: The summary call to gpt-test failed (fatal): 401 Bad key',
    });
    expect(h.turnCalls(mark)).toHaveLength(1);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text']);
    await expectValid(turnId);
  });

  it('fails the turn when the call overflows again right after the compaction', async () => {
    const { turnId } = await openTitled({ text: 'Summarise the logs.' });
    const mark = h.fake.requests.length;
    h.fake.enqueue(fakeContextOverflow(), summary(1), fakeContextOverflow());
    await h.run(turnId);

    expect(await h.turn(turnId)).toMatchObject({
      status: 'failed',
      error: 'context_overflow_after_compaction',
    });
    expect(h.turnCalls(mark)).toHaveLength(2);
    expect((await h.blocks(turnId)).map((b) => b.kind)).toEqual(['text', 'compaction']);
    await expectValid(turnId);
  });
});

describe('the reconciler', () => {
  it('re-enqueues a stranded /compact turn as its compact MANUAL job, which the worker finishes', async () => {
    const first = await openTitled({ text: 'Summarise the logs.' });
    h.fake.enqueue('The logs are quiet.');
    await h.run(first.turnId);
    // A `/compact` turn whose job Redis lost.
    const { turn } = (await new TurnRepository(h.db.dataSource).createWithUserMessage(ORG, {
      conversationId: ConversationId(first.conversationId),
      kind: 'compaction',
      effort: 'low',
      model: 'gpt-test',
      text: '/compact',
    }))!;
    h.fake.enqueue(summary(1));

    expect(await h.app.get(TurnReconciler).reconcile({ idleMs: 0 })).toContain(turn.id);

    const queues = h.app.get(BullMqClient);
    const job = await queues.queue(QueueName.Compactions).getJob(compactionJobId(turn.id, MANUAL_REQUEST_ID));
    expect(job).toMatchObject({
      name: 'compact',
      data: { orgId: ORG, turnId: turn.id, trigger: 'MANUAL', requestId: MANUAL_REQUEST_ID },
    });
    expect(await queues.queue(QueueName.Turns).getJob(`run-turn:${turn.id}:recover`)).toBeUndefined();
    for (let i = 0; i < 500 && (await h.turn(turn.id))!.status !== 'completed'; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await h.turn(turn.id))!.status).toBe('completed');
    expect((await h.blocks(turn.id)).map((b) => b.kind)).toEqual(['text', 'compaction', 'text']);
    expect(await h.app.get(TurnReconciler).reconcile({ idleMs: 0 })).not.toContain(turn.id);
  });
});
