import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { JobData } from '@portal/contracts';
import { PromptInputLoader, type PromptInputOptions, type TurnPromptInput } from '@portal/application';
import { type CallInput, ToolResultRepository, TurnLeaseRepository, TurnRepository } from '@portal/dal';
import {
  type ApprovalRequestBlock,
  DomainError,
  isDomainError,
  isTerminal,
  type OrgId,
  type RequestBlock,
  type ToolUseBlock,
  type TurnId,
} from '@portal/domain';
import { priceUsage, type ChatRequest, type ModelEntry, type TokenUsage } from '@portal/model';
import { addLogContext, inSpan, SPAN } from '@portal/observability';
import { assemblePrompt, type AssembledPrompt, type AssembleInput } from '@portal/prompt';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { parseToolArguments } from '../tools/tool-args.util';
import { McpTools } from '../tools/mcp/mcp-tools.service';
import { ToolRegistry } from '../tools/tool-registry.service';
import {
  error as fail,
  ok,
  type ClarificationDraft,
  type ToolContext,
  type ToolResultRun,
} from '../tools/tool.types';
import { CancelListener } from './cancel-listener.service';
import { CompactionGate } from './compaction-gate.service';
import { ModelCaller, type CallOutcome } from './model-call.service';
import { TitleService } from './title.service';
import { TurnEventsResync } from './turn-events-resync.service';
import { LeaseLostError, TurnStore, type HeldTurn } from './turn-store.service';
import {
  callBlocks,
  countCalls,
  nextStep,
  usedCallIds,
  type BlockDraft,
  type CallBlockIds,
} from './turn-steps.util';

/**
 * How long a claimed turn's `running` may wait to go out with the model's first output: under
 * what a person sees of a state change, while an answer that comes at once saves an append, an
 * announcement and a write to each client.
 */
const RUNNING_LINGER_MS = 50;

/** Why a run stops before the turn settles: cut off, the worker shuts down, or another took it. */
type StopReason = 'cancel' | 'shutdown' | 'lease_lost';

class RunStopped extends Error {}

/** Thrown on shutdown after the lease is released: BullMQ delivers the job again, to any worker. */
export class TurnHandedBackError extends Error {
  override name = 'TurnHandedBackError';
}

type Settled = 'settled' | 'paused';

/**
 * Runs a turn (turn protocol, steps 2–8): claims it with a lease, then repeats the step its stored
 * transcript calls for (`nextStep`) — a model call, a tool, a request's answer — until it
 * completes, fails, pauses or is cut off. Everything it decides is re-read from Postgres, so any
 * worker can take a turn over where another stopped.
 */
@Injectable()
export class TurnRunner {
  private readonly logger = new Logger(TurnRunner.name);
  private readonly promptOptions: PromptInputOptions;

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(TurnLeaseRepository) private readonly leases: TurnLeaseRepository,
    @Inject(ToolResultRepository) private readonly toolResults: ToolResultRepository,
    @Inject(PromptInputLoader) private readonly loader: PromptInputLoader,
    @Inject(TurnStore) private readonly store: TurnStore,
    @Inject(ModelCaller) private readonly caller: ModelCaller,
    @Inject(CompactionGate) private readonly gate: CompactionGate,
    @Inject(ToolRegistry) private readonly tools: ToolRegistry,
    @Inject(McpTools) private readonly mcp: McpTools,
    @Inject(CancelListener) private readonly cancels: CancelListener,
    @Inject(TitleService) private readonly titles: TitleService,
    @Inject(TurnEventsResync) private readonly resync: TurnEventsResync,
  ) {
    this.promptOptions = {
      portalFloor: config.portalFloor,
      catalogue: config.catalogue,
      limits: config.limits,
    };
  }

  /**
   * `shutdown` aborts when the worker stops: the turn is handed back (TurnHandedBackError).
   * `busy`: another worker holds the turn's live lease, so its job should look again later.
   */
  async run({ orgId, turnId }: JobData<'run-turn'>, shutdown: AbortSignal): Promise<'busy' | undefined> {
    const owner = `${this.config.workerId}/${randomUUID()}`;
    // A compaction turn (`/compact`) is the compaction worker's.
    const claimed = await this.leases.claim(orgId, turnId, owner, this.config.leaseMs, {
      kind: 'turn',
      callMessage: true,
      // The first call's input comes with the claim: one statement fewer per turn (issue #29).
      read: { turnsReplayed: this.config.limits.TURNS_REPLAYED },
    });
    if (!claimed) return this.unclaimed(orgId, turnId);
    const { turn } = claimed;
    addLogContext({ conversationId: turn.conversationId });
    const held: HeldTurn = { orgId, turn, owner, claimedAt: Date.now() };
    if (claimed.from === 'queued') {
      // Not awaited: the turn's next events follow it on the same Redis connection, in order. It
      // goes with the model's first output when that comes within the linger (issue #29).
      held.running = this.store
        .publishWithNext(turn, { type: 'turn_state', turnId, status: 'running' }, RUNNING_LINGER_MS)
        .catch((err: Error) => this.logger.warn(`turn ${turnId}: running not published (${err.message})`));
    } else {
      // A takeover: what the last worker committed but never published goes out first.
      await this.resync.resync(orgId, turn);
    }

    const stop = new AbortController();
    const halt = (reason: StopReason) => stop.signal.aborted || stop.abort(reason);
    const onShutdown = () => halt('shutdown');
    shutdown.addEventListener('abort', onShutdown, { once: true });
    if (shutdown.aborted) halt('shutdown');
    const unwatch = this.cancels.watch(turnId, () => halt('cancel'));
    const renewal = setInterval(() => {
      this.leases.renewLease(orgId, turnId, owner, this.config.leaseMs).then(
        (stillHeld) => stillHeld || halt('lease_lost'),
        (err) => this.logger.warn(`turn ${turnId}: lease renewal failed (${(err as Error).message})`),
      );
    }, this.config.leaseMs / 3);
    let outcome: Settled | null;
    try {
      const first =
        claimed.callMessageId && claimed.input
          ? { messageId: claimed.callMessageId, input: claimed.input }
          : null;
      outcome = await this.loop(held, stop.signal, first).catch((err) =>
        this.onError(held, stop.signal, err),
      );
    } finally {
      clearInterval(renewal);
      unwatch();
      shutdown.removeEventListener('abort', onShutdown);
    }
    if (outcome === 'settled') await this.titles.afterSettle(orgId, turn, shutdown);
  }

  /** A turn that could not be claimed: settled, not a `turn`, paused, or held by another worker. */
  private async unclaimed(orgId: OrgId, turnId: TurnId): Promise<'busy' | undefined> {
    const found = await this.turns.get(orgId, turnId);
    if (!found || found.kind !== 'turn') return;
    addLogContext({ conversationId: found.conversationId });
    // A settled turn's job delivered again (its worker died): what it never published goes out,
    // and turn 1 gets the title it may have missed.
    if (isTerminal(found.status)) {
      await this.resync.resync(orgId, found);
      await this.titles.afterSettle(orgId, found);
      return;
    }
    // Nothing runs a paused turn; a cancel job settles it (a no-op without a cancel request).
    if (found.status !== 'paused') return 'busy';
    const cut = await this.store.cutOffUnheld(orgId, turnId);
    if (cut) await this.titles.afterSettle(orgId, cut);
  }

  /**
   * The turn's job ran out of attempts (or stalled past them): like running out of retries, that
   * cuts the turn off (SPEC 2), keeping what it wrote, with the reason in `error`.
   */
  async outOfAttempts({ orgId, turnId }: JobData<'run-turn'>, reason: string): Promise<void> {
    const cut = await this.store.cutOffUnheld(orgId, turnId, `out_of_attempts: ${reason}`);
    if (cut) await this.titles.afterSettle(orgId, cut);
  }

  /** `first`: the first call's message and input, fixed and read by the claim (`TurnLeaseRepository.claim`). */
  private async loop(
    held: HeldTurn,
    signal: AbortSignal,
    first: { messageId: string; input: CallInput } | null,
  ): Promise<Settled> {
    const { orgId, turn } = held;
    let claimed = first;
    for (;;) {
      if (signal.aborted && signal.reason !== 'cancel') throw new RunStopped(String(signal.reason));
      // Before the read: steering that arrives after it lands after this call's output.
      const messageId = signal.aborted ? null : (claimed?.messageId ?? (await this.store.callMessage(held)));
      if (messageId === null) {
        await this.store.transition(held, 'cut_off');
        return 'settled';
      }
      const loaded = claimed
        ? this.loader.loadFrom(orgId, turn, claimed.input, this.promptOptions)
        : this.loader.load(orgId, turn, this.promptOptions);
      claimed = null;
      // The turn's MCP tools are listed once, before its first step, and kept with it.
      const input = await this.mcp.offer(orgId, await loaded, signal);
      const step = nextStep(input.messages);
      if (step.kind === 'done') {
        if ((await this.store.transition(held, 'completed')) === 'done') return 'settled';
      } else if (step.kind === 'pending') {
        throw new DomainError('invariant_violated', `a running turn has a pending ${step.request.kind}`);
      } else if (step.kind === 'tool' || step.kind === 'answer') {
        const paused = await this.runTool(
          held,
          input,
          step.use,
          signal,
          step.kind === 'answer' ? step.request : null,
        );
        if (paused) return 'paused';
      } else {
        const settled = await this.callModel(held, input, messageId, signal);
        if (settled) return settled;
      }
    }
  }

  /**
   * One model call; its blocks, usage and context size recorded together. Compaction (SPEC 5.1):
   * before the call when it is due, and after a context overflow, which retries the call once.
   * Null: the loop goes on.
   */
  private async callModel(
    held: HeldTurn,
    input: TurnPromptInput,
    messageId: string,
    signal: AbortSignal,
  ): Promise<Settled | null> {
    if (countCalls(input.messages) >= this.config.limits.MAX_CALLS_PER_TURN) {
      return this.fail(held, 'max_calls_reached');
    }
    let prompt = tracedAssemble(input.assemble);
    if (await this.gate.beforeCall(held, input, prompt, signal))
      ({ input, prompt } = await this.reassemble(held));
    let outcome = await this.send(held, input, prompt, signal);
    if (outcome.kind === 'overflow') {
      const failed = await this.gate.onOverflow(held, input, signal);
      if (failed !== null) return this.fail(held, failed);
      ({ input, prompt } = await this.reassemble(held));
      outcome = await this.send(held, input, prompt, signal);
      if (outcome.kind === 'overflow') return this.fail(held, 'context_overflow_after_compaction');
    }
    const used = usedCallIds(input.messages);
    switch (outcome.kind) {
      case 'answered': {
        const { result, ids } = outcome;
        const usage = result.usage && turnUsage(held, input.model, result.usage, ids);
        const drafts = callBlocks(result, ids, { usedCallIds: used });
        const opts = { messageId, ...(usage && { usage }) };
        if (result.toolCalls.length) {
          await this.store.append(held, drafts, opts);
          return null;
        }
        // The answer settles the turn in the statement that stores it, unless steering came meanwhile.
        return (await this.store.transition(held, 'completed', { ...opts, drafts, seen: input })) === 'done'
          ? 'settled'
          : null;
      }
      case 'stopped':
        if (signal.reason !== 'cancel') throw new RunStopped(String(signal.reason));
        await this.store.transition(held, 'cut_off', {
          drafts: callBlocks(outcome.partial, outcome.ids, { usedCallIds: used, partial: true }),
          messageId,
        });
        return 'settled';
      case 'blocked': {
        // The text shown stays; the blocked sentence, all after it and the call's tool calls do not.
        const { usage, ids } = outcome;
        await this.store.transition(held, 'failed', {
          error: outcome.error,
          drafts: callBlocks(outcome.partial, ids, { usedCallIds: used, partial: true }),
          messageId,
          ...(usage && { usage: turnUsage(held, input.model, usage, ids) }),
        });
        return 'settled';
      }
      case 'out_of_retries':
        // What the turn wrote and ran stays; memory replays it like any cut-off turn.
        await this.store.transition(held, 'cut_off', { error: outcome.error });
        return 'settled';
      case 'failed':
        return this.fail(held, outcome.error);
    }
  }

  /** The turn as stored now (a compaction block added) and its prompt. */
  private async reassemble(held: HeldTurn): Promise<{ input: TurnPromptInput; prompt: AssembledPrompt }> {
    const input = await this.loader.load(held.orgId, held.turn, this.promptOptions);
    return { input, prompt: tracedAssemble(input.assemble) };
  }

  private send(
    held: HeldTurn,
    input: TurnPromptInput,
    prompt: AssembledPrompt,
    signal: AbortSignal,
  ): Promise<CallOutcome> {
    // Our chat types are structurally the SDK's; the cast only names them.
    const request = { messages: prompt.messages, tools: prompt.tools } as ChatRequest;
    const { orgId, reviewer } = input.agent;
    return this.caller.call(input.turn, input.model, request, {
      effort: input.turn.effort,
      signal,
      reviewer: reviewer === null ? null : { orgId, model: reviewer },
      // A call the provider answered leaves a usage row even when it is retried (SPEC 2).
      spent: (usage, ids) => this.store.recordUsage(held, turnUsage(held, input.model, usage, ids)),
    });
  }

  private async fail(held: HeldTurn, error: string): Promise<Settled> {
    await this.store.transition(held, 'failed', { error });
    return 'settled';
  }

  /**
   * Runs one call of the model: records its result, or pauses the turn on a request. With the
   * call's answered `request`, turns the answer into the result (approved: the tool runs).
   * True when the turn paused.
   */
  private async runTool(
    held: HeldTurn,
    input: TurnPromptInput,
    use: ToolUseBlock,
    signal: AbortSignal,
    request: RequestBlock | null,
  ): Promise<boolean> {
    if (request?.kind === 'clarification_request') return this.result(held, use, ok(request.answer ?? ''));
    if (request?.kind === 'approval_request' && !request.approved) {
      const note = request.note ? ` Their note: ${request.note}` : '';
      return this.result(held, use, { outcome: 'denied', content: `The person denied this call.${note}` });
    }
    const tool = this.tools.resolve(use.name, input.agent, input.mcpTools);
    if (!tool) {
      const names = this.tools.names(input.agent, input.mcpTools).join(', ');
      return this.result(held, use, fail(`Unknown tool "${use.name}". The tools are: ${names}.`));
    }
    const parsed = parseToolArguments(use.arguments);
    if ('error' in parsed) return this.result(held, use, fail(parsed.error));
    if (tool.needsApproval && !request) {
      const { callId, name, arguments: args } = use;
      return this.pause(held, {
        kind: 'approval_request',
        callId,
        name,
        arguments: args,
        approved: null,
        note: null,
      });
    }
    const ctx: ToolContext = {
      orgId: held.orgId,
      turn: input.turn,
      userId: input.conversation.userId,
      signal,
    };
    const run = await inSpan(SPAN.toolCall, { 'portal.tool.name': use.name }, async (span) => {
      const done = await tool.executor.run(parsed.args, ctx, use);
      span.setAttribute('portal.tool.outcome', 'pause' in done ? 'paused' : done.outcome);
      return done;
    });
    return 'pause' in run ? this.pause(held, run.pause) : this.result(held, use, run);
  }

  /** Stores the whole result (its `ref` goes on the block) and appends the result block. */
  private async result(held: HeldTurn, use: ToolUseBlock, run: ToolResultRun): Promise<boolean> {
    const saved = await this.toolResults.save(held.orgId, {
      turnId: held.turn.id,
      callId: use.callId,
      content: run.content,
    });
    const block: BlockDraft = {
      id: randomUUID(),
      kind: 'tool_result',
      callId: use.callId,
      outcome: run.outcome,
      content: saved.content,
      ref: saved.ref,
    };
    await this.store.append(held, [block]);
    return false;
  }

  private async pause(
    held: HeldTurn,
    request: ClarificationDraft | Omit<ApprovalRequestBlock, 'id' | 'seq'>,
  ): Promise<boolean> {
    await this.store.transition(held, 'paused', { drafts: [{ id: randomUUID(), ...request } as BlockDraft] });
    return true;
  }

  /** Settles what can be settled; hands the turn back or rethrows what cannot. */
  private async onError(held: HeldTurn, signal: AbortSignal, err: unknown): Promise<Settled | null> {
    const { orgId, turn, owner } = held;
    const reason = signal.aborted ? (signal.reason as StopReason) : null;
    if (err instanceof LeaseLostError || reason === 'lease_lost') {
      this.logger.warn(`turn ${turn.id}: lease lost; another worker has it`);
      return null;
    }
    if (reason === 'shutdown') {
      await this.leases.releaseLease(orgId, turn.id, owner);
      throw new TurnHandedBackError(`turn ${turn.id} handed back on shutdown`);
    }
    if (reason === 'cancel') {
      await this.store.transition(held, 'cut_off');
      return 'settled';
    }
    if (isDomainError(err, 'invariant_violated')) {
      this.logger.error(`turn ${turn.id}: ${err.message}`);
      await this.store.failLoudly(held, `invariant_violated: ${err.message}`);
      return 'settled';
    }
    if (isDomainError(err)) {
      await this.store.transition(held, 'failed', { error: `${err.code}: ${err.message}` });
      return 'settled';
    }
    await this.leases.releaseLease(orgId, turn.id, owner).catch(() => undefined);
    throw err;
  }
}

/** The prompt of one model call, traced with its projected tokens in all and per layer. */
function tracedAssemble(input: AssembleInput): AssembledPrompt {
  return inSpan(SPAN.promptAssemble, {}, (span) => {
    const prompt = assemblePrompt(input);
    span.setAttribute('portal.prompt.tokens', prompt.totalTokens);
    for (const { layer, tokens } of prompt.layers) span.setAttribute(`portal.prompt.${layer}_tokens`, tokens);
    return prompt;
  });
}

/** The usage row of a call on the turn's model (it sets `contextTokens` too), once per call. */
function turnUsage(held: HeldTurn, model: ModelEntry, usage: TokenUsage, ids: CallBlockIds) {
  const cost = priceUsage(model, usage);
  return {
    turnId: held.turn.id,
    kind: 'turn' as const,
    model: model.id,
    ...usage,
    cost,
    callKey: `call:${ids.text}`,
  };
}
