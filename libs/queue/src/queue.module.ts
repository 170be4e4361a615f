import { Module, type DynamicModule } from '@nestjs/common';
import { RedisConnections } from '@portal/redis';
import { BullMqClient } from './bullmq.client';
import { QUEUE_CONNECTION, type QueueConnectionOptions } from './job-options';
import { PortalMetrics } from '@portal/observability';

/**
 * The queue side of every service: the BullMQ client producers emit jobs with, the metrics, and
 * the connection options a worker's transport server reads. On the connections of `RedisModule`,
 * which the app imports.
 */
@Module({})
export class QueueModule {
  static forRoot(options: { prefix: string }): DynamicModule {
    return {
      module: QueueModule,
      global: true,
      providers: [
        {
          provide: QUEUE_CONNECTION,
          useFactory: (redis: RedisConnections): QueueConnectionOptions => ({
            redis,
            prefix: options.prefix,
          }),
          inject: [RedisConnections],
        },
        { provide: PortalMetrics, useFactory: () => new PortalMetrics() },
        {
          provide: BullMqClient,
          useFactory: (connection: QueueConnectionOptions) => new BullMqClient(connection),
          inject: [QUEUE_CONNECTION],
        },
      ],
      exports: [QUEUE_CONNECTION, BullMqClient, PortalMetrics],
    };
  }
}
