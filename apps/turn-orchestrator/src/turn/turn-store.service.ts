import { Inject, Injectable } from '@nestjs/common';
import { turnStatusEvents, type PortalEvent } from '@portal/contracts';
import {
  BlockRepository,
  placeBlocks,
  TurnLeaseRepository,
  TurnRepository,
  UsageRepository,
  type PlacedBlocks,
  type UsageRow,
} from '@portal/dal';
import {
  assertInvariants,
  type Block,
  isPendingRequest,
  isTerminal,
  type Message,
  type OrgId,
  type Turn,
  type TurnId,
  type TurnStatus,
} from '@portal/domain';
import { priceUsage, type ModelEntry, type TokenUsage } from '@portal/model';
import { ConversationEvents } from '@portal/redis';
import { PortalMetrics } from '@portal/observability';
import { DataSource, type EntityManager } from 'typeorm';
import type { BlockDraft } from './turn-steps.util';

/** A turn this worker has claimed, and the lease owner it claimed it as. */
export interface HeldTurn {
  orgId: OrgId;
  turn: Turn;
  owner: string;
  /** When this run claimed the turn (ms), for `portal_turn_duration_seconds`. */
  claimedAt?: number;
  /**
   * The turn's `running` on its way (it waits for the next events, `publishWithNext`): what hands
   * the turn's events to another process awaits it first, so they come after it.
   */
  running?: Promise<void>;
}

/** The worker no longer holds the turn (its lease lapsed and another worker took it, or it settled). */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** Another writer took the message position this worker meant to use; the write is tried again. */
class PositionTakenError extends Error {}

/** The answer a pending clarification gets when its turn is cut off. */
export const CANCELLED_ANSWER = '[cancelled: the turn was cut off]';

interface Tx {
  em: EntityManager;
  turns: TurnRepository;
  blocks: BlockRepository;
  messages: Message[];
  cancelRequested: boolean;
}

type Usage = UsageRow & { callKey: string };

/** A turn's transcript as a step read it, with the steering count read alongside. */
export interface SeenTranscript {
  messages: Message[];
  steeringCount: number;
}

interface TransitionOptions {
  error?: string;
  drafts?: BlockDraft[];
  messageId?: string;
  usage?: Usage;
  /** What the step read: the settle may then go in one statement (`settleAsSeen`). */
  seen?: SeenTranscript;
}

/**
 * Every write of a running turn, each in one transaction holding the turn row's lock (the lock
 * the gateway's steering append takes too), and the events that follow a committed write.
 * A block's position is the turn's next one at the moment it is written: the stored transcript
 * decides what the worker does next (`nextStep`), so a re-run never writes a block twice.
 */
@Injectable()
export class TurnStore {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  async publish(turn: Pick<Turn, 'conversationId'>, event: PortalEvent): Promise<void> {
    await this.events.publish(turn.conversationId, event);
  }

  /** `event` with the turn's next events, or `lingerMs` from now (`ConversationEvents.publishWithNext`). */
  async publishWithNext(
    turn: Pick<Turn, 'conversationId'>,
    event: PortalEvent,
    lingerMs: number,
  ): Promise<void> {
    await this.events.publishWithNext(turn.conversationId, event, lingerMs);
  }

  /**
   * The usage row of a call made beside the turn's own (the title's `summary`, a `review`), priced
   * for its model, recorded once under `callKey` and then published. It never touches
   * `contextTokens`.
   */
  async recordSideCall(
    orgId: OrgId,
    turn: Pick<Turn, 'id' | 'conversationId'>,
    call: { kind: 'summary' | 'review'; model: ModelEntry; usage: TokenUsage; callKey: string },
  ): Promise<void> {
    const row = {
      kind: call.kind,
      model: call.model.id,
      ...call.usage,
      cost: priceUsage(call.model, call.usage),
    };
    const usage = new UsageRepository(this.dataSource);
    if (await usage.add(orgId, { turnId: turn.id, ...row, callKey: call.callKey })) {
      await this.publish(turn, { type: 'usage', turnId: turn.id, row });
    }
  }

  /**
   * The message the next model call writes to: the last one when it is the assistant's, else a
   * new one. Fixed before the prompt is read, so steering that arrives during the call lands
   * after the call's output (the model never read it) and the loop makes one more call.
   * Null when the turn's cancel was requested (nothing is written then).
   */
  async callMessage(held: HeldTurn): Promise<string | null> {
    const leases = new TurnLeaseRepository(this.dataSource);
    for (let attempt = 1; ; attempt++) {
      const call = await leases.callMessage(held.orgId, held.turn.id, held.owner);
      if (!call) throw new LeaseLostError(`turn ${held.turn.id} is no longer held by ${held.owner}`);
      if (call.cancelRequested) return null;
      if (call.messageId) return call.messageId;
      if (attempt === 3) throw new PositionTakenError(`message position of turn ${held.turn.id} taken`);
    }
  }

  /**
   * Appends blocks after the turn's last block: to `messageId`, or to the last message when it is
   * the assistant's, else to a new assistant message. Every block passes `placeBlocks` first.
   * With `usage`, the call's usage row and `contextTokens` are written in the same transaction.
   */
  async append(
    held: HeldTurn,
    drafts: BlockDraft[],
    opts: { messageId?: string; usage?: Usage } = {},
  ): Promise<Block[]> {
    const { orgId, turn } = held;
    const blocks = await this.withHeld(held, async (tx) => {
      const placed = await this.place(tx, held, drafts, opts.messageId);
      return tx.turns.recordCall(orgId, turn.id, { placed, usage: opts.usage });
    });
    await this.events.publishAll(turn.conversationId, [
      ...blockEvents(turn, blocks),
      ...usageEvents(turn, opts.usage),
    ]);
    return blocks;
  }

  /**
   * Moves the held turn to `status` after appending `drafts` (and recording the call's `usage`),
   * once the whole turn passes the six invariants (a violation throws DomainError
   * `invariant_violated` and nothing is written). A turn whose cancel was requested is cut off
   * rather than completed. `steered`: the turn would complete with a steering message after its
   * answer, so it stays running with the drafts and usage recorded.
   */
  async transition(
    held: HeldTurn,
    status: Exclude<TurnStatus, 'queued' | 'running'>,
    opts: TransitionOptions = {},
  ): Promise<'steered' | 'done'> {
    const { orgId, turn } = held;
    const outcome =
      (opts.seen && (await this.settleAsSeen(held, status, opts, opts.seen))) ??
      (await this.withHeld(held, async (tx) => {
        const placed = opts.drafts?.length
          ? await this.place(tx, held, opts.drafts, opts.messageId)
          : undefined;
        const messages = placed?.messages ?? tx.messages;
        const record = { placed, usage: opts.usage };
        if (status === 'completed' && messages.at(-1)?.role === 'user') {
          return { blocks: await tx.turns.recordCall(orgId, turn.id, record), settled: null };
        }
        const settled = status === 'completed' && tx.cancelRequested ? 'cut_off' : status;
        assertInvariants({ turn: { ...turn, status: settled }, messages });
        const blocks = await tx.turns.recordCall(orgId, turn.id, {
          ...record,
          status: { to: settled, from: ['running'], error: opts.error ?? null },
        });
        return { blocks, settled };
      }));
    const events = [...blockEvents(turn, outcome.blocks), ...usageEvents(turn, opts.usage)];
    if (outcome.settled === null) {
      await this.events.publishAll(turn.conversationId, events);
      return 'steered';
    }
    this.observeSettled(held, outcome.settled);
    await this.events.publishAll(turn.conversationId, [
      ...events,
      ...turnStatusEvents(turn.id, outcome.settled, opts.error),
    ]);
    return 'done';
  }

  /**
   * The settle in one statement, without reading the turn under its lock first: the drafts are
   * placed on the transcript the step read (`seen`), and the write happens only if the turn is
   * still as read then (held, running, no cancel, no steering since). Null, having written
   * nothing, when it is not (or the drafts go to a message `seen` lacks): the caller takes the
   * lock and decides on what is stored.
   */
  private async settleAsSeen(
    held: HeldTurn,
    status: Exclude<TurnStatus, 'queued' | 'running'>,
    opts: TransitionOptions,
    seen: SeenTranscript,
  ): Promise<{ blocks: Block[]; settled: TurnStatus } | null> {
    const { orgId, turn, owner } = held;
    const message = seen.messages.find((m) => m.id === opts.messageId);
    if (!opts.drafts?.length || !message) return null;
    const placed = placeBlocks(turn, seen.messages, message, opts.drafts);
    if (placed.messages.at(-1)?.role === 'user') return null;
    assertInvariants({ turn: { ...turn, status }, messages: placed.messages });
    const blocks = await new TurnRepository(this.dataSource).recordCallIfUnchanged(
      orgId,
      turn.id,
      { owner, steeringCount: seen.steeringCount },
      { placed, usage: opts.usage, status: { to: status, from: ['running'], error: opts.error ?? null } },
    );
    return blocks && { blocks, settled: status };
  }

  /** The usage row (and `contextTokens`) of a call that leaves no block: an empty reply, retried. */
  async recordUsage(held: HeldTurn, usage: Usage): Promise<void> {
    await this.withHeld(held, (tx) => tx.turns.recordCall(held.orgId, held.turn.id, { usage }));
    await this.events.publishAll(held.turn.conversationId, usageEvents(held.turn, usage));
  }

  /** After an invariant violation: the turn fails with no further check (it cannot pass one). */
  async failLoudly(held: HeldTurn, error: string): Promise<void> {
    const failed = await new TurnRepository(this.dataSource).updateStatus(
      held.orgId,
      held.turn.id,
      'failed',
      {
        error,
        from: ['running'],
      },
    );
    if (failed) {
      this.observeSettled(held, 'failed');
      await this.events.publishAll(held.turn.conversationId, turnStatusEvents(held.turn.id, 'failed', error));
    }
  }

  /**
   * Cuts off a turn no worker holds: a paused one whose cancel was requested or, with `error` (its
   * job ran out of attempts), a queued, running or paused one without a live lease. A pending
   * request gets a cancelled answer (a denial for an approval) so invariant 5 holds; unanswered
   * calls stay unanswered. Null when the turn is not (or no longer) such a turn.
   */
  async cutOffUnheld(orgId: OrgId, turnId: TurnId, error?: string): Promise<Turn | null> {
    const done = await this.dataSource.transaction(async (em) => {
      const turns = new TurnRepository(em);
      const blocks = new BlockRepository(em);
      const locked = await turns.lockForUpdate(orgId, turnId);
      if (!locked || locked.leaseLive) return null;
      const { status } = locked.turn;
      const due = error === undefined ? status === 'paused' && locked.cancelRequested : !isTerminal(status);
      if (!due) return null;
      const messages = await blocks.listTurnMessages(orgId, turnId);
      const pending = messages.flatMap((m) => m.blocks).find(isPendingRequest);
      let answered: Block | null = null;
      if (pending) {
        answered =
          pending.kind === 'clarification_request'
            ? { ...pending, answer: CANCELLED_ANSWER }
            : { ...pending, approved: false, note: 'cancelled: the turn was cut off' };
        await blocks.updateBlock(orgId, answered);
      }
      const settled = messages.map((m) => ({
        ...m,
        blocks: m.blocks.map((b) => (b.id === answered?.id ? answered : b)),
      }));
      assertInvariants({ turn: { ...locked.turn, status: 'cut_off' }, messages: settled });
      await turns.updateStatus(orgId, turnId, 'cut_off', { from: [status], error: error ?? null });
      return { turn: locked.turn, answered };
    });
    if (!done) return null;
    this.metrics.turns.inc({ status: 'cut_off' });
    await this.events.publishAll(done.turn.conversationId, [
      ...blockEvents(done.turn, done.answered ? [done.answered] : []),
      ...turnStatusEvents(done.turn.id, 'cut_off', error),
    ]);
    return done.turn;
  }

  /** `portal_turns_total` and, for a settled status, `portal_turn_duration_seconds`. */
  private observeSettled(held: HeldTurn, status: TurnStatus): void {
    if (!isTerminal(status)) return;
    this.metrics.turns.inc({ status });
    if (held.claimedAt !== undefined) {
      this.metrics.turnDuration.observe({ status }, (Date.now() - held.claimedAt) / 1000);
    }
  }

  private async withHeld<T>(held: HeldTurn, fn: (tx: Tx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.dataSource.transaction(async (em) => {
          const turns = new TurnRepository(em);
          const blocks = new BlockRepository(em);
          const locked = await blocks.lockTurnMessages(held.orgId, held.turn.id);
          if (locked?.status !== 'running' || locked.leaseOwner !== held.owner) {
            throw new LeaseLostError(`turn ${held.turn.id} is no longer held by ${held.owner}`);
          }
          const { messages, cancelRequested } = locked;
          return fn({ em, turns, blocks, messages, cancelRequested });
        });
      } catch (err) {
        if (!(err instanceof PositionTakenError) || attempt === 3) throw err;
      }
    }
  }

  private async assistantMessage(tx: Tx, held: HeldTurn): Promise<Message> {
    const last = tx.messages.at(-1);
    if (last?.role === 'assistant') return last;
    // The gateway adds a steering message without taking the turn's lock: a clash on the message
    // position leaves this insert out (null), and the transaction is tried again.
    const created = await tx.blocks.addMessage(held.orgId, held.turn.id, 'assistant');
    if (!created) throw new PositionTakenError(`message position of turn ${held.turn.id} taken`);
    tx.messages = [...tx.messages, created];
    return created;
  }

  /**
   * Where `drafts` go: to `messageId`, or to the assistant message (`assistantMessage`), at the
   * positions after the turn's last block, each checked by `placeBlocks`. Writes no block.
   */
  private async place(
    tx: Tx,
    held: HeldTurn,
    drafts: BlockDraft[],
    messageId?: string,
  ): Promise<PlacedBlocks> {
    const message = messageId
      ? tx.messages.find((m) => m.id === messageId)
      : await this.assistantMessage(tx, held);
    if (!message) throw new Error(`message ${messageId} is not a message of turn ${held.turn.id}`);
    return placeBlocks(held.turn, tx.messages, message, drafts);
  }
}

function blockEvents(turn: Turn, blocks: Block[]): PortalEvent[] {
  return blocks.map((block) => ({ type: 'block_finished', turnId: turn.id, block }));
}

function usageEvents(turn: Turn, usage: Usage | undefined): PortalEvent[] {
  if (!usage) return [];
  const { turnId: _t, callKey: _k, ...row } = usage;
  return [{ type: 'usage', turnId: turn.id, row }];
}
