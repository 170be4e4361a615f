import { Inject, Injectable } from '@nestjs/common';
import { TurnRepository, type Conversation, type NewTurn } from '@portal/dal';
import { DomainError, type Turn, type TurnId } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { MetricsService } from '../metrics/metrics.service';

/**
 * Turn protocol step 1: the queued turn, the person's message and (when it selected skills) the
 * SKILL_SELECT trace entry in one statement; then the events, then the job.
 */
@Injectable()
export class TurnOpeningService {
  constructor(
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
    @Inject(MetricsService) private readonly metrics: MetricsService,
  ) {}

  /** Throws DalError `turn_active` when another request opened a turn first. */
  async open(
    caller: Principal,
    conversation: Conversation,
    input: Omit<NewTurn, 'conversationId'>,
    enqueue: (turnId: TurnId) => Promise<void>,
  ): Promise<Turn> {
    const created = await this.turns.createWithUserMessage(caller.orgId, {
      ...input,
      conversationId: conversation.id,
    });
    if (!created && input.afterTurnN !== undefined) throw retryRefused(input.afterTurnN);
    if (!created) throw new DomainError('not_found', `Conversation ${conversation.id} not found`);
    const { turn, message } = created;
    this.metrics.turnOpened(turn.kind);
    // Published before the job exists: a worker that picks it up at once publishes `running`
    // after `turn_started` and `queued`, never before them.
    await this.dispatch.publish(conversation.id, [
      { type: 'turn_started', turnId: turn.id },
      { type: 'block_finished', turnId: turn.id, block: message.blocks[0] },
      { type: 'turn_state', turnId: turn.id, status: 'queued' },
    ]);
    await enqueue(turn.id);
    return turn;
  }
}

/** A retry refused: the turn is not, or no longer, a settled latest turn that ended failed or cut off. */
export function retryRefused(n: number): DomainError {
  return new DomainError(
    'retry_refused',
    `Turn ${n} cannot be retried: only the latest turn, once it failed or was cut off`,
  );
}
