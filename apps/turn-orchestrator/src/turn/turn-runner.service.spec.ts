import { Logger } from '@nestjs/common';
import { PromptInputLoader, type TurnPromptInput } from '@portal/application';
import { ToolResultRepository, TurnLeaseRepository, TurnRepository } from '@portal/dal';
import { type Message, type Turn, type TurnStatus } from '@portal/domain';
import {
  approval,
  assistant,
  clarification,
  makeTurn,
  text,
  toolResult,
  toolUse,
  user,
  type MessageDraft,
} from '@portal/domain/testing';
import type { StreamResult } from '@portal/model';
import { resolveLimits } from '@portal/prompt';
import {
  ID as RECORD_ID,
  agentRecord,
  conversationRecord,
  modelEntry,
  newTestService,
  turnRecord,
} from '@portal/testing/unit';
import type { TurnOrchestratorConfig } from '../config';
import { CONFIG } from '../config.token';
import { McpTools } from '../tools/mcp/mcp-tools.service';
import { ToolRegistry } from '../tools/tool-registry.service';
import type { ToolExecutor } from '../tools/tool.types';
import { CancelListener } from './cancel-listener.service';
import { CompactionGate } from './compaction-gate.service';
import { ModelCaller, type CallOutcome } from './model-call.service';
import { TitleService } from './title.service';
import { TurnEventsResync } from './turn-events-resync.service';
import { TurnHandedBackError, TurnRunner } from './turn-runner.service';
import { LeaseLostError, TurnStore } from './turn-store.service';

const ID = { ...RECORD_ID, worker: 'worker-a' };
/** The assistant message `makeTurn` numbers second: where a turn's first call writes. */
const CALL_MESSAGE = 'm2';
const JOB = { orgId: ID.org, turnId: ID.turn };

const MODEL = modelEntry({ price: { inputPerMTok: 2, outputPerMTok: 4, cachedInputPerMTok: 1 } });
const MAX_CALLS = 3;
// Only what the runner reads of its config; the rest belongs to other services.
const CONFIG_VALUE = {
  workerId: ID.worker,
  leaseMs: 60_000,
  portalFloor: 'You are the portal assistant.',
  catalogue: [MODEL],
  limits: resolveLimits({ MAX_CALLS_PER_TURN: MAX_CALLS }),
} as TurnOrchestratorConfig;

// The turn's effort differs from the agent's: the call must carry the turn's.
const TURN = turnRecord({
  status: 'running',
  effort: 'high',
  model: MODEL.id,
});
const AGENT = agentRecord({ model: MODEL.id, effort: 'medium' });

/** The turn as the loader reads it: the person's message, then `drafts`. */
function inputOf(...drafts: MessageDraft[]): TurnPromptInput {
  const messages: Message[] = makeTurn('running', [user(text('Check Q3.')), ...drafts]).messages;
  return {
    turn: TURN,
    conversation: conversationRecord(),
    agent: AGENT,
    model: MODEL,
    messages,
    mcpTools: null,
    steeringCount: 0,
    assemble: {
      portalFloor: CONFIG_VALUE.portalFloor,
      agent: { instructions: AGENT.instructions, httpTools: [] },
      selectedSkills: [],
      catalogue: [],
      window: { summary: null, turns: [] },
      newMessage: { text: 'Check Q3.', attachmentIds: [] },
      currentTurn: messages.slice(1),
      attachments: {},
      model: MODEL,
      limits: CONFIG_VALUE.limits,
    },
  };
}

const IDS = { thinking: 'th-1', text: 'tx-1', toolUse: (i: number) => `tu-${i}` };
const USAGE = { inputTokens: 1000, outputTokens: 500, cachedTokens: 0 };

function answered(output: Partial<StreamResult>): CallOutcome {
  const result = { text: '', thinking: '', toolCalls: [], finishReason: 'stop', usage: USAGE, ...output };
  return { kind: 'answered', result, ids: IDS };
}

function setup() {
  const { sut, mocks } = newTestService(TurnRunner, {
    provide: [[CONFIG, CONFIG_VALUE]],
    mocks: {
      turns: TurnRepository,
      leases: TurnLeaseRepository,
      toolResults: ToolResultRepository,
      loader: PromptInputLoader,
      store: TurnStore,
      caller: ModelCaller,
      gate: CompactionGate,
      tools: ToolRegistry,
      mcp: McpTools,
      cancels: CancelListener,
      titles: TitleService,
      resync: TurnEventsResync,
    },
  });
  // A turn claimed fresh from `queued`, its first call's message fixed by the claim.
  mocks.leases.claim.mockResolvedValue({ turn: TURN, from: 'queued', callMessageId: CALL_MESSAGE });
  mocks.store.publish.mockResolvedValue();
  mocks.store.publishWithNext.mockResolvedValue();
  mocks.store.callMessage.mockResolvedValue(CALL_MESSAGE);
  mocks.store.append.mockResolvedValue([]);
  mocks.store.transition.mockResolvedValue('done');
  mocks.mcp.offer.mockImplementation(async (_org, input) => input);
  mocks.cancels.watch.mockReturnValue(() => undefined);
  mocks.gate.beforeCall.mockResolvedValue(false);
  // Each test queues the reads it expects: a loop that goes round once too often fails, not hangs.
  mocks.loader.load.mockRejectedValue(new Error('the turn was read more often than the test expects'));
  mocks.toolResults.save.mockImplementation(async (_org, { turnId, callId, content }) => ({
    ref: `tr_${callId}`,
    conversationId: ID.conversation,
    turnId,
    callId,
    content,
  }));
  return { sut, mocks };
}

type Mocks = ReturnType<typeof setup>['mocks'];

afterEach(() => jest.restoreAllMocks());

const run = (sut: TurnRunner, shutdown = new AbortController().signal) => sut.run(JOB, shutdown);
/** The held turn every store write names. */
const held = expect.objectContaining({ orgId: ID.org, turn: TURN });

/** The statuses the runner moved the turn to, in order. */
const transitions = (mocks: Mocks) => mocks.store.transition.mock.calls.map(([, status]) => status);

/** A tool the registry resolves, with a spy executor. */
function tool(mocks: Mocks, run: ToolExecutor['run'], needsApproval = false) {
  const executor = { run: jest.fn(run) };
  mocks.tools.resolve.mockReturnValue({ executor, needsApproval });
  return executor;
}

describe('TurnRunner: the agent loop', () => {
  it('settles the turn on an answer without tool calls, storing it with its priced usage, then names it', async () => {
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf());
    mocks.caller.call.mockResolvedValue(answered({ text: 'Q3 was $4.2M.' }));

    await run(sut);

    const input = inputOf();
    // The answer settles in the statement that stores it, checked against the transcript it read.
    expect(mocks.store.transition).toHaveBeenCalledTimes(1);
    expect(mocks.store.transition).toHaveBeenCalledWith(held, 'completed', {
      messageId: CALL_MESSAGE,
      drafts: [{ id: IDS.text, kind: 'text', text: 'Q3 was $4.2M.', narration: false, steering: false }],
      seen: input,
      usage: {
        turnId: ID.turn,
        kind: 'turn',
        model: MODEL.id,
        ...USAGE,
        // 1000 input at $2 and 500 output at $4 per million tokens.
        cost: 0.004,
        callKey: `call:${IDS.text}`,
      },
    });
    expect(mocks.store.append).not.toHaveBeenCalled();
    expect(mocks.caller.call).toHaveBeenCalledWith(
      TURN,
      MODEL,
      expect.objectContaining({ messages: expect.any(Array) }),
      expect.objectContaining({ effort: 'high', reviewer: null }),
    );
    expect(mocks.titles.afterSettle).toHaveBeenCalledWith(ID.org, TURN, expect.any(AbortSignal));
  });

  it('makes one more call when steering arrived during the call that gave the answer', async () => {
    const { sut, mocks } = setup();
    const steered = inputOf(assistant(text('A long answer.')), user(text('Shorter, please.')));
    mocks.loader.load.mockResolvedValueOnce(inputOf()).mockResolvedValueOnce(steered);
    mocks.caller.call
      .mockResolvedValueOnce(answered({ text: 'A long answer.' }))
      .mockResolvedValueOnce(answered({ text: 'Q3 went well.' }));
    mocks.store.transition.mockResolvedValueOnce('steered').mockResolvedValueOnce('done');
    mocks.store.callMessage.mockResolvedValue('m4');

    await run(sut);

    expect(mocks.caller.call).toHaveBeenCalledTimes(2);
    // The second call reads the turn again, steering included, and writes to a message after it.
    expect(mocks.store.transition).toHaveBeenLastCalledWith(
      held,
      'completed',
      expect.objectContaining({ messageId: 'm4', seen: steered }),
    );
    expect(mocks.titles.afterSettle).toHaveBeenCalledTimes(1);
  });

  it('stores tool calls without settling, runs the tool, records its result with a ref, and calls again', async () => {
    const { sut, mocks } = setup();
    const call = { callId: 'c1', name: 'search_attachments', arguments: '{"query":"Q3"}' };
    const used = assistant(text('Let me look.'), toolUse('c1', call.name, call.arguments));
    mocks.loader.load
      .mockResolvedValueOnce(inputOf())
      .mockResolvedValueOnce(inputOf(used))
      .mockResolvedValueOnce(inputOf(assistant(text('Let me look.'), toolUse('c1'), toolResult('c1'))));
    mocks.caller.call
      .mockResolvedValueOnce(answered({ text: 'Let me look.', toolCalls: [call] }))
      .mockResolvedValueOnce(answered({ text: 'Found it.' }));
    const executor = tool(mocks, async () => ({ outcome: 'ok', content: 'Q3: $4.2M' }));

    await run(sut);

    const [[, callDrafts, callOpts], [, resultDrafts]] = mocks.store.append.mock.calls;
    expect(callDrafts.map((b) => b.kind)).toEqual(['text', 'tool_use']);
    expect(callDrafts[0]).toMatchObject({ narration: true });
    expect(callOpts).toMatchObject({
      messageId: CALL_MESSAGE,
      usage: expect.objectContaining({ kind: 'turn' }),
    });
    expect(executor.run).toHaveBeenCalledWith(
      { query: 'Q3' },
      expect.objectContaining({ orgId: ID.org, userId: ID.user }),
      expect.objectContaining({ callId: 'c1' }),
    );
    expect(resultDrafts).toEqual([
      expect.objectContaining({
        kind: 'tool_result',
        callId: 'c1',
        outcome: 'ok',
        content: 'Q3: $4.2M',
        ref: 'tr_c1',
      }),
    ]);
    expect(mocks.caller.call).toHaveBeenCalledTimes(2);
    expect(transitions(mocks)).toEqual(['completed']);
  });

  it('still makes the call that reaches MAX_CALLS_PER_TURN, and fails the turn instead of making one more', async () => {
    const call = (id: string) => [toolUse(id), toolResult(id)];
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf(assistant(...call('c1'), ...call('c2'))));
    mocks.caller.call.mockResolvedValue(answered({ text: 'Third call answers.' }));
    await run(sut);
    expect(mocks.caller.call).toHaveBeenCalledTimes(1);

    const limited = setup();
    limited.mocks.loader.load.mockResolvedValueOnce(
      inputOf(assistant(...call('c1'), ...call('c2'), ...call('c3'))),
    );
    await run(limited.sut);
    expect(limited.mocks.caller.call).not.toHaveBeenCalled();
    expect(limited.mocks.store.transition).toHaveBeenCalledWith(held, 'failed', {
      error: 'max_calls_reached',
    });
  });

  it.each<[string, CallOutcome, TurnStatus, string]>([
    [
      'a fault that outlived its retries cuts the turn off',
      { kind: 'out_of_retries', error: 'model_error: HTTP 500 after 4 attempts: down' },
      'cut_off',
      'model_error: HTTP 500 after 4 attempts: down',
    ],
    [
      'a request the provider refuses fails it',
      { kind: 'failed', error: 'model_error: HTTP 400: bad request' },
      'failed',
      'model_error: HTTP 400: bad request',
    ],
  ])('%s, with the reason', async (_, outcome, status, error) => {
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf());
    mocks.caller.call.mockResolvedValue(outcome);
    await run(sut);
    expect(mocks.store.transition).toHaveBeenCalledWith(held, status, { error });
    expect(mocks.titles.afterSettle).toHaveBeenCalled();
  });

  it('fails a turn the reviewer blocked, keeping only the text shown and the call usage', async () => {
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf());
    const partial = {
      thinking: '',
      text: 'Shown.',
      toolCalls: [{ callId: 'c1', name: 'x', arguments: '{}' }],
    };
    mocks.caller.call.mockResolvedValue({
      kind: 'blocked',
      error: 'blocked_by_review: rude',
      partial,
      ids: IDS,
      usage: USAGE,
    });
    await run(sut);
    expect(mocks.store.transition).toHaveBeenCalledWith(held, 'failed', {
      error: 'blocked_by_review: rude',
      // The blocked call's tool calls never run, so none is recorded.
      drafts: [expect.objectContaining({ kind: 'text', text: 'Shown.' })],
      messageId: CALL_MESSAGE,
      usage: expect.objectContaining({ kind: 'turn', ...USAGE }),
    });
  });
});

describe('TurnRunner: pauses for the person', () => {
  const use = assistant(toolUse('c1', 'send_invoice', '{"to":"acme"}'));

  it('pauses with an approval request, running nothing, when the tool needs approval', async () => {
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf(use));
    const executor = tool(mocks, async () => ({ outcome: 'ok', content: 'sent' }), true);

    await run(sut);

    expect(executor.run).not.toHaveBeenCalled();
    expect(mocks.store.transition).toHaveBeenCalledWith(held, 'paused', {
      drafts: [
        {
          id: expect.any(String),
          kind: 'approval_request',
          callId: 'c1',
          name: 'send_invoice',
          arguments: '{"to":"acme"}',
          approved: null,
          note: null,
        },
      ],
    });
    // A pause is not an ending: no title yet.
    expect(mocks.titles.afterSettle).not.toHaveBeenCalled();
  });

  it('runs the approved call, and answers a denied one with the note without running it', async () => {
    const approved = setup();
    approved.mocks.loader.load
      .mockResolvedValueOnce(inputOf(assistant(toolUse('c1', 'send_invoice', '{}'), approval('c1', true))))
      .mockResolvedValueOnce(inputOf(assistant(text('Sent.'))));
    const executor = tool(approved.mocks, async () => ({ outcome: 'ok', content: 'sent' }), true);
    await run(approved.sut);
    expect(executor.run).toHaveBeenCalledTimes(1);

    const denied = setup();
    const request = { ...approval('c1', false), note: 'too costly' };
    denied.mocks.loader.load
      .mockResolvedValueOnce(inputOf(assistant(toolUse('c1', 'send_invoice', '{}'), request)))
      .mockResolvedValueOnce(inputOf(assistant(text('Not sent.'))));
    const never = tool(denied.mocks, async () => ({ outcome: 'ok', content: 'sent' }), true);
    await run(denied.sut);
    expect(never.run).not.toHaveBeenCalled();
    expect(denied.mocks.toolResults.save).toHaveBeenCalledWith(ID.org, {
      turnId: ID.turn,
      callId: 'c1',
      content: 'The person denied this call. Their note: too costly',
    });
    expect(denied.mocks.store.append).toHaveBeenCalledWith(held, [
      expect.objectContaining({ kind: 'tool_result', outcome: 'denied' }),
    ]);
  });

  it("turns an answered clarification into the call's result, and pauses on a tool's own question", async () => {
    const answeredTurn = setup();
    answeredTurn.mocks.loader.load
      .mockResolvedValueOnce(
        inputOf(assistant(toolUse('c1', 'ask_clarification'), clarification('c1', 'The 2024 one'))),
      )
      .mockResolvedValueOnce(inputOf(assistant(text('Done.'))));
    await run(answeredTurn.sut);
    expect(answeredTurn.mocks.tools.resolve).not.toHaveBeenCalled();
    expect(answeredTurn.mocks.store.append).toHaveBeenCalledWith(held, [
      expect.objectContaining({ kind: 'tool_result', callId: 'c1', outcome: 'ok', content: 'The 2024 one' }),
    ]);

    const asking = setup();
    asking.mocks.loader.load.mockResolvedValueOnce(inputOf(assistant(toolUse('c1', 'ask_clarification'))));
    const question = {
      kind: 'clarification_request' as const,
      callId: 'c1',
      question: 'Which year?',
      options: [],
      answer: null,
    };
    tool(asking.mocks, async () => ({ pause: question }));
    await run(asking.sut);
    expect(asking.mocks.store.transition).toHaveBeenCalledWith(held, 'paused', {
      drafts: [{ id: expect.any(String), ...question }],
    });
  });
});

describe('TurnRunner: cancel, shutdown and failures', () => {
  it('cuts the turn off without a model call when its cancel was requested before the call', async () => {
    const { sut, mocks } = setup();
    mocks.leases.claim.mockResolvedValue({ turn: TURN, from: 'queued', callMessageId: null });
    mocks.store.callMessage.mockResolvedValue(null);
    await run(sut);
    expect(mocks.caller.call).not.toHaveBeenCalled();
    expect(mocks.store.transition).toHaveBeenCalledWith(held, 'cut_off');
    expect(mocks.titles.afterSettle).toHaveBeenCalled();
  });

  it('cuts a call off on cancel, keeping the text that had streamed', async () => {
    const { sut, mocks } = setup();
    mocks.loader.load.mockResolvedValueOnce(inputOf());
    let cancel = () => {};
    mocks.cancels.watch.mockImplementation((turnId, onCancel) => {
      if (turnId === ID.turn) cancel = onCancel;
      return () => undefined;
    });
    mocks.caller.call.mockImplementation(async (_turn, _model, _request, { signal }) => {
      cancel();
      // The call sees the abort and stops with what had streamed.
      expect(signal.aborted).toBe(true);
      return { kind: 'stopped', partial: { thinking: '', text: 'Half an ans', toolCalls: [] }, ids: IDS };
    });

    await run(sut);

    expect(mocks.store.transition).toHaveBeenCalledWith(held, 'cut_off', {
      drafts: [{ id: IDS.text, kind: 'text', text: 'Half an ans', narration: false, steering: false }],
      messageId: CALL_MESSAGE,
    });
  });

  it('hands the turn back on shutdown: releases its lease and writes nothing', async () => {
    const { sut, mocks } = setup();
    const shutdown = new AbortController();
    shutdown.abort();
    await expect(run(sut, shutdown.signal)).rejects.toThrow(TurnHandedBackError);
    expect(mocks.leases.releaseLease).toHaveBeenCalledWith(
      ID.org,
      ID.turn,
      expect.stringMatching(`^${ID.worker}/`),
    );
    expect(mocks.caller.call).not.toHaveBeenCalled();
    expect(mocks.store.transition).not.toHaveBeenCalled();
  });

  it('fails loudly, without the usual checks, a running turn that holds a pending request', async () => {
    const { sut, mocks } = setup();
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    mocks.loader.load.mockResolvedValueOnce(inputOf(assistant(toolUse('c1'), approval('c1', null))));
    await run(sut);
    expect(mocks.store.failLoudly).toHaveBeenCalledWith(
      held,
      'invariant_violated: a running turn has a pending approval_request',
    );
    expect(mocks.store.transition).not.toHaveBeenCalled();
  });

  it('stops quietly when another worker took the turn, writing and naming nothing', async () => {
    const { sut, mocks } = setup();
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    mocks.store.callMessage.mockRejectedValue(new LeaseLostError('lost'));
    mocks.leases.claim.mockResolvedValue({ turn: TURN, from: 'queued', callMessageId: null });
    await expect(run(sut)).resolves.toBeUndefined();
    expect(mocks.store.transition).not.toHaveBeenCalled();
    expect(mocks.leases.releaseLease).not.toHaveBeenCalled();
    expect(mocks.titles.afterSettle).not.toHaveBeenCalled();
  });

  it('releases the lease and rethrows an unexpected error, so the job is tried again', async () => {
    const { sut, mocks } = setup();
    const down = new Error('connection reset');
    mocks.loader.load.mockRejectedValue(down);
    mocks.leases.releaseLease.mockResolvedValue(true);
    await expect(run(sut)).rejects.toBe(down);
    expect(mocks.leases.releaseLease).toHaveBeenCalledWith(ID.org, ID.turn, expect.any(String));
    expect(mocks.store.transition).not.toHaveBeenCalled();
  });
});

describe('TurnRunner: claiming', () => {
  it('publishes `running` for a turn claimed from the queue, and resyncs one taken over first', async () => {
    const fresh = setup();
    fresh.mocks.loader.load.mockResolvedValueOnce(inputOf(assistant(text('Done.'))));
    await run(fresh.sut);
    expect(fresh.mocks.store.publishWithNext).toHaveBeenCalledWith(
      TURN,
      { type: 'turn_state', turnId: ID.turn, status: 'running' },
      expect.any(Number),
    );
    expect(fresh.mocks.resync.resync).not.toHaveBeenCalled();

    const takeover = setup();
    takeover.mocks.leases.claim.mockResolvedValue({ turn: TURN, from: 'running', callMessageId: null });
    takeover.mocks.loader.load.mockResolvedValueOnce(inputOf(assistant(text('Done.'))));
    await run(takeover.sut);
    expect(takeover.mocks.resync.resync).toHaveBeenCalledWith(ID.org, TURN);
    expect(takeover.mocks.store.publishWithNext).not.toHaveBeenCalled();
  });

  it.each<[string, Partial<Turn> | null, 'busy' | undefined, 'resync' | 'cut' | 'nothing']>([
    ['a missing turn is dropped', null, undefined, 'nothing'],
    [
      'a /compact turn is left to the compaction worker',
      { kind: 'compaction', status: 'queued' },
      undefined,
      'nothing',
    ],
    ['a turn another worker holds is looked at again later', { status: 'running' }, 'busy', 'nothing'],
    [
      'a settled turn delivered again publishes what it missed and gets its title',
      { status: 'completed' },
      undefined,
      'resync',
    ],
    ['a paused turn is cut off if its cancel was requested', { status: 'paused' }, undefined, 'cut'],
  ])('an unclaimed turn: %s', async (_, found, answer, action) => {
    const { sut, mocks } = setup();
    const turn = found && { ...TURN, ...found };
    mocks.leases.claim.mockResolvedValue(null);
    mocks.turns.get.mockResolvedValue(turn);
    mocks.store.cutOffUnheld.mockResolvedValue(turn);

    await expect(run(sut)).resolves.toBe(answer);

    expect(mocks.loader.load).not.toHaveBeenCalled();
    expect(mocks.resync.resync).toHaveBeenCalledTimes(action === 'resync' ? 1 : 0);
    expect(mocks.store.cutOffUnheld).toHaveBeenCalledTimes(action === 'cut' ? 1 : 0);
    expect(mocks.titles.afterSettle).toHaveBeenCalledTimes(action === 'nothing' ? 0 : 1);
  });
});
