import { Controller, Inject } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { UnrecoverableError } from 'bullmq';
import { QueueName, type JobData } from '@portal/contracts';
import { BullMqContext, JOB_OPTIONS } from '@portal/queue';
import { PortalMetrics } from '@portal/observability';
import { CompactionService } from './compaction.service';

/** Consumes `compact` jobs of the `compactions` queue. */
@Controller()
export class CompactHandler {
  constructor(
    @Inject(CompactionService) private readonly compactions: CompactionService,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  /** Runs the job, counting it in `portal_compactions_total` by trigger and outcome. */
  @EventPattern(QueueName.Compactions)
  async handle(@Payload() data: JobData<'compact'>, @Ctx() context: BullMqContext): Promise<void> {
    try {
      await this.compactions.run(data, context);
      this.metrics.compactions.inc({ trigger: data.trigger, outcome: 'completed' });
    } catch (err) {
      const attempts = JOB_OPTIONS[QueueName.Compactions].attempts ?? 1;
      const final = err instanceof UnrecoverableError || context.getJob().attemptsMade + 1 >= attempts;
      const outcome = context.getSignal().aborted ? 'handed_back' : final ? 'failed' : 'retried';
      this.metrics.compactions.inc({ trigger: data.trigger, outcome });
      throw err;
    }
  }
}
