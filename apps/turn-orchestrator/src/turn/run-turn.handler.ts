import { Inject, Injectable } from '@nestjs/common';
import { QueueName, type JobData } from '@portal/contracts';
import { JOB_OPTIONS, JobHandler, RetryLaterError, type JobContext, type JobHandlerOf } from '@portal/queue';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { TurnRunner } from './turn-runner.service';

/**
 * `run-turn { orgId, turnId }`: every job of a turn (open, answer, cancel, recovery) runs the same
 * way; the turn's state in Postgres says what is left to do. Idempotent. A job that finds another
 * worker holding the turn looks again once that lease could have lapsed (its worker may be dead).
 * The last attempt's failure cuts the turn off.
 */
@JobHandler('run-turn')
@Injectable()
export class RunTurnHandler implements JobHandlerOf<'run-turn'> {
  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(TurnRunner) private readonly runner: TurnRunner,
  ) {}

  async handle(data: JobData<'run-turn'>, context: JobContext): Promise<void> {
    let outcome: 'busy' | undefined;
    try {
      outcome = await this.runner.run(data, context.signal);
    } catch (err) {
      const attempts = JOB_OPTIONS[QueueName.Turns].attempts ?? 1;
      if (!context.signal.aborted && context.attemptsMade + 1 >= attempts) {
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
