import { Inject, Injectable } from '@nestjs/common';
import { UnrecoverableError } from 'bullmq';
import { QueueName, type JobData } from '@portal/contracts';
import { JOB_OPTIONS, JobHandler, PortalMetrics, type JobContext, type JobHandlerOf } from '@portal/queue';
import { CompactionService } from './compaction.service';

/** Consumes `compact` jobs of the `compactions` queue. */
@JobHandler('compact')
@Injectable()
export class CompactHandler implements JobHandlerOf<'compact'> {
  constructor(
    @Inject(CompactionService) private readonly compactions: CompactionService,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  /** Runs the job, counting it in `portal_compactions_total` by trigger and outcome. */
  async handle(data: JobData<'compact'>, context: JobContext): Promise<void> {
    try {
      await this.compactions.run(data, context);
      this.metrics.compactions.inc({ trigger: data.trigger, outcome: 'completed' });
    } catch (err) {
      const attempts = JOB_OPTIONS[QueueName.Compactions].attempts ?? 1;
      const final = err instanceof UnrecoverableError || context.attemptsMade + 1 >= attempts;
      const outcome = context.signal.aborted ? 'handed_back' : final ? 'failed' : 'retried';
      this.metrics.compactions.inc({ trigger: data.trigger, outcome });
      throw err;
    }
  }
}
