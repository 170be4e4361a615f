import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  BlockRepository,
  TraceRepository,
  TurnRepository,
  UsageRepository,
  type UsageRow,
} from '@portal/dal';
import {
  DomainError,
  isPendingRequest,
  type RequestBlock,
  type Turn,
  type TurnId,
  type TurnStatus,
} from '@portal/domain';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { parseInput } from '../common/validation.pipe';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { approvalAnswerSchema, clarificationAnswerSchema } from '@portal/contracts';

export type TurnView = Turn;
export type UsageView = Omit<UsageRow, 'turnId'>;
export interface TraceView {
  kind: 'SKILL_SELECT';
  skillIds: string[];
  at: string;
}

@Injectable()
export class TurnsService {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(BlockRepository) private readonly blocks: BlockRepository,
    @Inject(UsageRepository) private readonly usage: UsageRepository,
    @Inject(TraceRepository) private readonly traces: TraceRepository,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
  ) {}

  get(caller: Principal, turnId: TurnId): Promise<TurnView> {
    return this.owned.turn(caller, turnId);
  }

  async usageOf(caller: Principal, turnId: TurnId): Promise<UsageView[]> {
    const turn = await this.owned.turn(caller, turnId);
    const rows = await this.usage.listForTurn(caller.orgId, turn.id);
    return rows.map(({ turnId: _turnId, ...row }) => row);
  }

  async traceOf(caller: Principal, turnId: TurnId): Promise<TraceView[]> {
    const turn = await this.owned.turn(caller, turnId);
    const entries = await this.traces.listForTurn(caller.orgId, turn.id);
    return entries.map((e) => ({ kind: e.kind, skillIds: e.skillIds, at: e.at.toISOString() }));
  }

  /**
   * Turn protocol step 5: the answer goes into the request block and the paused turn becomes
   * `running` (without a lease) in one transaction; then the job and the events.
   */
  async answer(
    caller: Principal,
    turnId: TurnId,
    blockId: string,
    body: unknown,
  ): Promise<{ turnId: TurnId; status: TurnStatus }> {
    const turn = await this.owned.turn(caller, turnId);
    const found = await this.blocks.getBlock(caller.orgId, blockId);
    if (!found || found.turnId !== turn.id) {
      throw new DomainError('not_found', `Request ${blockId} not found in turn ${turnId}`);
    }
    const answered = withAnswer(pendingRequest(found.block), body);
    const stored = await this.dataSource.transaction(async (em) => {
      const turns = new TurnRepository(em);
      const blocks = new BlockRepository(em);
      if ((await turns.lockForUpdate(caller.orgId, turn.id))?.turn.status !== 'paused') {
        throw new DomainError('request_not_pending', `Turn ${turnId} is not waiting for an answer`);
      }
      // Read again under the lock: the request may have been answered or cancelled meanwhile.
      pendingRequest((await blocks.getBlock(caller.orgId, blockId))!.block);
      const updated = await blocks.updateBlock(caller.orgId, answered);
      await turns.updateStatus(caller.orgId, turn.id, 'running', { from: ['paused'] });
      return updated!;
    });
    // The events before the job, so the worker's events of the resumed turn come after them.
    await this.dispatch.publish(turn.conversationId, [
      { type: 'block_finished', turnId: turn.id, block: stored },
      { type: 'turn_state', turnId: turn.id, status: 'running' },
    ]);
    await this.dispatch.runTurn(caller.orgId, turn.id, `answer-${blockId}`);
    return { turnId: turn.id, status: 'running' };
  }

  /**
   * Turn protocol step 6: flag the turn, tell its worker, and enqueue a job that settles it when
   * nobody runs it. A turn that has already settled is left as it is.
   */
  async cancel(caller: Principal, turnId: TurnId): Promise<{ turnId: TurnId; status: TurnStatus }> {
    const turn = await this.owned.turn(caller, turnId);
    const flagged = await this.turns.requestCancel(caller.orgId, turn.id);
    if (!flagged) return { turnId: turn.id, status: (await this.turns.get(caller.orgId, turn.id))!.status };
    await this.dispatch.cancel(turn.id);
    await this.dispatch.runTurn(caller.orgId, turn.id, 'cancel');
    return { turnId: turn.id, status: flagged.status };
  }
}

function pendingRequest(block: Parameters<typeof isPendingRequest>[0]): RequestBlock {
  if (!isPendingRequest(block)) {
    throw new DomainError('request_not_pending', `Block ${block.id} is not a pending request`);
  }
  return block;
}

function withAnswer(block: RequestBlock, body: unknown): RequestBlock {
  if (block.kind === 'clarification_request') {
    return { ...block, answer: parseInput(clarificationAnswerSchema, body ?? {}).answer };
  }
  const { approved, note } = parseInput(approvalAnswerSchema, body ?? {});
  return { ...block, approved, note: note ?? null };
}
