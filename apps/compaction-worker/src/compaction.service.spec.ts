import { UnrecoverableError, type Job } from 'bullmq';
import { compactionBlockId, compactionLineId } from '@portal/application';
import type { JobData } from '@portal/contracts';
import {
  AgentRepository,
  BlockRepository,
  CompactionRepository,
  ConversationRepository,
  PersonRequestRepository,
  TurnLeaseRepository,
  TurnRepository,
  WindowRepository,
  type Db,
} from '@portal/dal';
import {
  DomainError,
  type Block,
  type Message,
  type Turn,
  type TurnKind,
  type TurnStatus,
} from '@portal/domain';
import { assistant, compaction, makeTurn, text, user, type MessageDraft } from '@portal/domain/testing';
import { BrokenStreamError, ModelClientFactory, type ModelStreamEvent } from '@portal/model';
import { resolveLimits } from '@portal/prompt';
import { BullMqContext } from '@portal/queue';
import { ConversationEvents } from '@portal/redis';
import {
  ID as RECORD_ID,
  conversationRecord,
  modelEntry,
  newTestService,
  turnRecord,
} from '@portal/testing/unit';
import { CompactionService } from './compaction.service';

const ID = { ...RECORD_ID, job: 'job-1' };
const REQUEST = { auto: 'auto-3', manual: 'manual' };

const MODEL = modelEntry({ price: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 1 } });
const USAGE = { inputTokens: 1000, outputTokens: 250, cachedTokens: 0 };
/** The turn this job is for: turn 5 of its conversation. */
const N = 5;

const turnOf = (kind: TurnKind, status: TurnStatus, over: Partial<Turn> = {}): Turn =>
  turnRecord({ n: N, kind, status, model: MODEL.id, ...over });

/** The model's summary of the running turn: its heading, and the person's request verbatim. */
const SUMMARY = `Summary of turns 1–${N}\n\n## Requests\n- Turn ${N}: Keep going.\n\n## Decisions\n- Use Q3.`;

const messagesOf = (...drafts: MessageDraft[]): Message[] => makeTurn('running', drafts).messages;

/** The summary call's answer: streamed deltas, then the result. */
function answers(summary: string) {
  return async function* (): AsyncGenerator<ModelStreamEvent> {
    yield { type: 'text', text: summary };
    yield {
      type: 'done',
      result: { text: summary, thinking: '', toolCalls: [], finishReason: 'stop', usage: USAGE },
    };
  };
}

/** A summary call whose stream fails once it has begun. */
function breaksWith(err: Error) {
  return async function* (): AsyncGenerator<ModelStreamEvent> {
    yield { type: 'text', text: 'Summary of' };
    throw err;
  };
}

function setup() {
  const { sut, mocks } = newTestService(CompactionService, {
    mocks: { events: ConversationEvents, models: ModelClientFactory },
    // The service opens its repositories on the data source it is given.
    constructed: {
      turns: TurnRepository,
      leases: TurnLeaseRepository,
      blocks: BlockRepository,
      compactions: CompactionRepository,
      conversations: ConversationRepository,
      agents: AgentRepository,
      windows: WindowRepository,
      requests: PersonRequestRepository,
    },
    args: (m) => [
      { db: {} as Db, events: m.events, models: m.models, catalogue: [MODEL], limits: resolveLimits() },
    ],
  });
  mocks.blocks.getBlock.mockResolvedValue(null);
  mocks.conversations.get.mockResolvedValue(conversationRecord());
  mocks.agents.get.mockResolvedValue(null);
  mocks.blocks.listTurnMessages.mockResolvedValue(messagesOf(user(text('Keep going.'))));
  mocks.windows.readWindow.mockResolvedValue({ summary: null, turns: [] });
  mocks.windows.readTurns.mockResolvedValue([]);
  mocks.requests.readBefore.mockResolvedValue([]);
  mocks.models.streamChat.mockImplementation(answers(SUMMARY));
  // What the repository stores is what it was given, each block at the next seq.
  mocks.compactions.appendOnce.mockImplementation(async (_org, _turn, blocks) => ({
    written: true,
    blocks: blocks.map((b, i) => ({ ...b, seq: 10 + i }) as Block),
  }));
  mocks.events.publish.mockResolvedValue('1-0');
  mocks.events.publishAll.mockResolvedValue([]);
  return { sut, mocks };
}

type Mocks = ReturnType<typeof setup>['mocks'];

function job(trigger: 'AUTO' | 'MANUAL'): JobData<'compact'> {
  return {
    orgId: ID.org,
    turnId: ID.turn,
    trigger,
    requestId: trigger === 'AUTO' ? REQUEST.auto : REQUEST.manual,
  };
}

/** The job as its attempt `attemptsMade + 1` of the queue's three. */
const context = (attemptsMade = 0) =>
  new BullMqContext([{ id: ID.job, attemptsMade } as Job, new AbortController().signal, undefined]);

/** Every event published, in order, whichever of the two calls sent it. */
function published(mocks: Mocks) {
  const calls = [
    ...mocks.events.publish.mock.calls.map((c, i) => ({
      order: mocks.events.publish.mock.invocationCallOrder[i],
      events: [c[1]],
    })),
    ...mocks.events.publishAll.mock.calls.map((c, i) => ({
      order: mocks.events.publishAll.mock.invocationCallOrder[i],
      events: c[1],
    })),
  ];
  return calls.sort((a, b) => a.order - b.order).flatMap((c) => c.events);
}

afterEach(() => jest.restoreAllMocks());

describe('CompactionService: AUTO, inside a running turn', () => {
  it('summarises on the turn model with no tools, appends the block once with its priced usage, then announces it', async () => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));

    await sut.run(job('AUTO'), context());

    const [entry, request] = mocks.models.streamChat.mock.calls[0];
    expect(entry).toBe(MODEL);
    expect(request).not.toHaveProperty('tools');
    const block = {
      id: compactionBlockId(ID.turn, REQUEST.auto),
      kind: 'compaction',
      summary: SUMMARY,
      trigger: 'AUTO',
      coversTurns: { from: 1, to: N },
    };
    const usage = { turnId: ID.turn, kind: 'compaction', model: MODEL.id, ...USAGE, cost: 0.004 };
    expect(mocks.compactions.appendOnce).toHaveBeenCalledWith(ID.org, ID.turn, [block], {
      status: 'running',
      usage: { ...usage, callKey: REQUEST.auto },
    });
    const { turnId: _, ...row } = usage;
    expect(published(mocks)).toEqual([
      { type: 'compaction_started', turnId: ID.turn },
      { type: 'compaction_finished', turnId: ID.turn, block: { ...block, seq: 10 } },
      { type: 'usage', turnId: ID.turn, row },
    ]);
  });

  it('does nothing when its block is already stored (the job run again)', async () => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    const stored = { ...compaction(), id: compactionBlockId(ID.turn, REQUEST.auto), seq: 7 } as Block;
    mocks.blocks.getBlock.mockResolvedValue({ turnId: ID.turn, messageId: 'msg-2', block: stored });
    await sut.run(job('AUTO'), context());
    expect(mocks.blocks.getBlock).toHaveBeenCalledWith(ID.org, compactionBlockId(ID.turn, REQUEST.auto));
    expect(mocks.models.streamChat).not.toHaveBeenCalled();
    expect(published(mocks)).toEqual([]);
  });

  it('announces nothing when another run wrote the block first', async () => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    mocks.compactions.appendOnce.mockResolvedValue({ written: false, blocks: [] });
    await sut.run(job('AUTO'), context());
    expect(published(mocks)).toEqual([{ type: 'compaction_started', turnId: ID.turn }]);
  });

  it('gives up for good on a turn that is not running, before the call or when the write finds it stopped', async () => {
    const paused = setup();
    paused.mocks.turns.get.mockResolvedValue(turnOf('turn', 'paused'));
    await expect(paused.sut.run(job('AUTO'), context())).rejects.toThrow(UnrecoverableError);
    expect(paused.mocks.models.streamChat).not.toHaveBeenCalled();

    const stopped = setup();
    stopped.mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    stopped.mocks.compactions.appendOnce.mockResolvedValue(null);
    await expect(stopped.sut.run(job('AUTO'), context())).rejects.toThrow(UnrecoverableError);
  });

  it('gives up for good on a missing turn, a model outside the catalogue, or a block that breaks a rule', async () => {
    const missing = setup();
    missing.mocks.turns.get.mockResolvedValue(null);
    await expect(missing.sut.run(job('AUTO'), context())).rejects.toThrow(UnrecoverableError);

    const unknownModel = setup();
    unknownModel.mocks.turns.get.mockResolvedValue(turnOf('turn', 'running', { model: 'retired-model' }));
    await expect(unknownModel.sut.run(job('AUTO'), context())).rejects.toThrow(/retired-model/);
    expect(unknownModel.mocks.models.streamChat).not.toHaveBeenCalled();

    const broken = setup();
    broken.mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    broken.mocks.compactions.appendOnce.mockRejectedValue(new DomainError('invariant_violated', 'rule 6'));
    const err = await broken.sut.run(job('AUTO'), context()).catch((e: Error) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect(err).toHaveProperty('message', 'invariant_violated: rule 6');
  });

  it.each<[string, () => Error, boolean]>([
    ['a refused request fails the job for good', () => new Error('400 bad request'), true],
    ['a broken stream leaves the job to be tried again', () => new BrokenStreamError('stream cut'), false],
  ])('summary call failure: %s', async (_, failure, final) => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    mocks.models.streamChat.mockImplementation(breaksWith(failure()));
    const err = await sut.run(job('AUTO'), context()).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err instanceof UnrecoverableError).toBe(final);
    expect(err).toHaveProperty('message', expect.stringContaining(`The summary call to ${MODEL.id} failed`));
    expect(mocks.compactions.appendOnce).not.toHaveBeenCalled();
  });

  it('writes nothing when the summary call answers with no text', async () => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('turn', 'running'));
    mocks.models.streamChat.mockImplementation(answers('   '));
    await expect(sut.run(job('AUTO'), context())).rejects.toThrow('The summary call answered with no text');
    expect(mocks.compactions.appendOnce).not.toHaveBeenCalled();
  });
});

describe('CompactionService: MANUAL, a /compact turn', () => {
  const block = compaction({
    trigger: 'MANUAL',
    summary: `Summary of turns 1–${N - 1}`,
    coversTurns: { from: 1, to: N - 1 },
  });
  /** What the compaction turn holds once written: the command, then the block and the portal's line. */
  const written = messagesOf(
    user(text('/compact')),
    assistant(block, text(`Context summarised: turns 1–${N - 1}.`)),
  );

  function manual(mocks: Mocks, status: TurnStatus = 'queued') {
    mocks.turns.get.mockResolvedValue(turnOf('compaction', status));
    mocks.leases.claim.mockResolvedValue({ turn: turnOf('compaction', 'running'), from: status });
    mocks.blocks.listTurnMessages
      .mockResolvedValueOnce(messagesOf(user(text('/compact'))))
      .mockResolvedValueOnce(written);
    mocks.models.streamChat.mockImplementation(
      answers(`Summary of turns 1–${N - 1}\n\n## Decisions\n- None.`),
    );
    mocks.turns.updateStatus.mockResolvedValue(turnOf('compaction', 'completed'));
  }

  it('claims the turn, writes the block and the portal line, and completes it', async () => {
    const { sut, mocks } = setup();
    manual(mocks);

    await sut.run(job('MANUAL'), context());

    expect(mocks.leases.claim).toHaveBeenCalledWith(ID.org, ID.turn, `compaction-worker:${ID.job}`, 30_000);
    const [, , blocks, opts] = mocks.compactions.appendOnce.mock.calls[0];
    // The turns before this one, from turn 1; the line is the portal's, so the turn ends on text.
    expect(blocks).toEqual([
      expect.objectContaining({
        id: compactionBlockId(ID.turn, REQUEST.manual),
        kind: 'compaction',
        trigger: 'MANUAL',
        coversTurns: { from: 1, to: N - 1 },
      }),
      {
        id: compactionLineId(ID.turn, REQUEST.manual),
        kind: 'text',
        text: `Context summarised: turns 1–${N - 1}.`,
        narration: false,
        steering: false,
      },
    ]);
    expect(opts).toMatchObject({ status: 'running', usage: { kind: 'compaction', callKey: REQUEST.manual } });
    expect(mocks.turns.updateStatus).toHaveBeenCalledWith(ID.org, ID.turn, 'completed', {
      from: ['running'],
    });
    const events = published(mocks);
    expect(events[0]).toEqual({ type: 'turn_state', turnId: ID.turn, status: 'running' });
    expect(events.slice(-2)).toEqual([
      { type: 'turn_state', turnId: ID.turn, status: 'completed' },
      { type: 'turn_finished', turnId: ID.turn, status: 'completed' },
    ]);
  });

  it.each([
    ['a settled turn is left alone', 'completed'],
    ['a turn another worker claimed is left to it', 'running'],
  ] as const)('%s', async (_, status) => {
    const { sut, mocks } = setup();
    mocks.turns.get.mockResolvedValue(turnOf('compaction', status));
    mocks.leases.claim.mockResolvedValue(null);
    await sut.run(job('MANUAL'), context());
    expect(mocks.leases.claim).toHaveBeenCalledTimes(status === 'completed' ? 0 : 1);
    expect(mocks.models.streamChat).not.toHaveBeenCalled();
    expect(mocks.turns.updateStatus).not.toHaveBeenCalled();
  });

  it.each([
    ['on its last attempt, fails the turn with the reason', 2, true],
    ['on the attempt before its last, leaves the turn for the next one', 1, false],
  ])('a summary call that keeps failing, %s', async (_, attemptsMade, fails) => {
    const { sut, mocks } = setup();
    manual(mocks);
    mocks.models.streamChat.mockImplementation(breaksWith(new BrokenStreamError('stream cut')));

    await expect(sut.run(job('MANUAL'), context(attemptsMade))).rejects.toThrow(/stream cut/);

    expect(mocks.compactions.appendOnce).not.toHaveBeenCalled();
    if (fails) {
      expect(mocks.turns.updateStatus).toHaveBeenCalledWith(ID.org, ID.turn, 'failed', {
        error: expect.stringMatching(
          /^compaction_failed: The summary call to gpt-test failed \(broken_stream\)/,
        ),
        from: ['queued', 'running'],
      });
      expect(published(mocks).slice(-1)).toEqual([
        expect.objectContaining({ type: 'turn_finished', status: 'failed' }),
      ]);
    } else {
      expect(mocks.turns.updateStatus).not.toHaveBeenCalled();
    }
  });

  it('fails the turn as invariant_violated, at once, when what it wrote breaks a rule of the blocks', async () => {
    const { sut, mocks } = setup();
    manual(mocks);
    // The transcript read before settling ends on the compaction block, not on text (rule 1).
    mocks.blocks.listTurnMessages
      .mockReset()
      .mockResolvedValueOnce(messagesOf(user(text('/compact'))))
      .mockResolvedValueOnce(messagesOf(user(text('/compact')), assistant(block)));

    await expect(sut.run(job('MANUAL'), context())).rejects.toThrow(UnrecoverableError);

    expect(mocks.turns.updateStatus).not.toHaveBeenCalledWith(
      ID.org,
      ID.turn,
      'completed',
      expect.anything(),
    );
    expect(mocks.turns.updateStatus).toHaveBeenCalledWith(ID.org, ID.turn, 'failed', {
      error: expect.stringMatching(/^invariant_violated: /),
      from: ['queued', 'running'],
    });
  });
});
