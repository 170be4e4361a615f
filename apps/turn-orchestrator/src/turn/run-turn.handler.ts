import { Inject, Injectable } from '@nestjs/common';
import type { JobData } from '@portal/contracts';
import { JobHandler, type JobContext, type JobHandlerOf } from '@portal/queue';
import { TurnRunner } from './turn-runner.service';

/**
 * `run-turn { orgId, turnId }`: every job of a turn (open, answer, cancel, recovery) runs the same
 * way; the turn's state in Postgres says what is left to do. Idempotent.
 */
@JobHandler('run-turn')
@Injectable()
export class RunTurnHandler implements JobHandlerOf<'run-turn'> {
  constructor(@Inject(TurnRunner) private readonly runner: TurnRunner) {}

  handle(data: JobData<'run-turn'>, context: JobContext): Promise<void> {
    return this.runner.run(data, context.signal);
  }
}
