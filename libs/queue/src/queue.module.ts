import { Module, type DynamicModule } from '@nestjs/common';
import { BullMqClient } from './bullmq.client';
import { QUEUE_CONNECTION, type QueueConnectionOptions } from './job-options';
import { PortalMetrics } from './observability/portal-metrics.service';
import { UploadHandOff } from './upload-handoff';

/**
 * The queue side of every service: the BullMQ client producers emit jobs with, the metrics, the
 * upload hand-off, and the connection options a worker's transport server reads.
 */
@Module({})
export class QueueModule {
  static forRoot(options: QueueConnectionOptions): DynamicModule {
    const connection: QueueConnectionOptions = { redisUrl: options.redisUrl, prefix: options.prefix };
    return {
      module: QueueModule,
      global: true,
      providers: [
        { provide: QUEUE_CONNECTION, useValue: connection },
        { provide: PortalMetrics, useFactory: () => new PortalMetrics() },
        { provide: BullMqClient, useFactory: () => new BullMqClient(connection) },
        { provide: UploadHandOff, useFactory: () => new UploadHandOff(options.redisUrl, options.prefix) },
      ],
      exports: [QUEUE_CONNECTION, BullMqClient, PortalMetrics, UploadHandOff],
    };
  }
}
