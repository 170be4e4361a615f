import { Inject, Injectable } from '@nestjs/common';
import type { JobData } from '@portal/contracts';
import { JobHandler, type JobContext, type JobHandlerOf } from '@portal/queue';
import { CompactionService } from './compaction.service';

/** Consumes `compact` jobs of the `compactions` queue. */
@JobHandler('compact')
@Injectable()
export class CompactHandler implements JobHandlerOf<'compact'> {
  constructor(@Inject(CompactionService) private readonly compactions: CompactionService) {}

  handle(data: JobData<'compact'>, context: JobContext): Promise<void> {
    return this.compactions.run(data, context);
  }
}
