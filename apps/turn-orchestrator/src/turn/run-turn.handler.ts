import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { QueueName, type JobData } from '@portal/contracts';
import { BullMqContext, JOB_OPTIONS, RetryLaterError } from '@portal/queue';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { TurnRunner } from './turn-runner.service';

/**
 * `run-turn { orgId, turnId }`: every job of a turn (open, answer, cancel, recovery) runs the same
 * way; the turn's state in Postgres says what is left to do. Idempotent. A job that finds another
 * worker holding the turn looks again once that lease could have lapsed (its worker may be dead).
 * The last attempt's failure cuts the turn off.
 */
@Controller()
export class RunTurnHandler {
  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(TurnRunner) private readonly runner: TurnRunner,
  ) {}

  @EventPattern(QueueName.Turns)
  async handle(@Payload() data: JobData<'run-turn'>, @Ctx() context: BullMqContext): Promise<void> {
    const signal = context.getSignal();
    let outcome: 'busy' | undefined;
    try {
      outcome = await this.runner.run(data, signal);
    } catch (err) {
      const attempts = JOB_OPTIONS[QueueName.Turns].attempts ?? 1;
      if (!signal.aborted && context.getJob().attemptsMade + 1 >= attempts) {
        // When even this write fails, the reconciler finds the failed job and cuts the turn off.
        await this.runner.outOfAttempts(data, (err as Error).message).catch(() => undefined);
      }
      throw err;
    }
    if (outcome === 'busy') {
      throw new RetryLaterError(this.config.leaseMs, `turn ${data.turnId} is held by another worker`);
    }
  }
}
