import { Inject, Injectable } from '@nestjs/common';
import { TurnRepository, type PersonTurn } from '@portal/dal';
import { DomainError, type Turn, type TurnId } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { MetricsService } from '../metrics/metrics.service';

/**
 * Turn protocol step 1: the queued turn on its agent's terms, the person's message and (when it
 * selected skills) the SKILL_SELECT trace entry in one statement; then the events, then the job.
 */
@Injectable()
export class TurnOpeningService {
  constructor(
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
    @Inject(MetricsService) private readonly metrics: MetricsService,
  ) {}

  /**
   * Answers `not_found` when the conversation is not the caller's; throws DalError `turn_active`
   * when it has an open turn (another request opened it first).
   */
  async open(
    caller: Principal,
    input: PersonTurn,
    enqueue: (turnId: TurnId) => Promise<void>,
  ): Promise<Turn> {
    const { conversationId } = input;
    const created = await this.turns.createForPerson(caller.orgId, caller.userId, input);
    if (!created && input.afterTurnN !== undefined) throw retryRefused(input.afterTurnN);
    if (!created) throw new DomainError('not_found', `Conversation ${conversationId} not found`);
    const { turn, message } = created;
    this.metrics.turnOpened(turn.kind);
    // Published before the job exists: a worker that picks it up at once publishes `running`
    // after `turn_started` and `queued`, never before them.
    await this.dispatch.publish(conversationId, [
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
