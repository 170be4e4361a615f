import { Module, type DynamicModule, Injectable, Inject } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { JOB_QUEUE, type JobName, type QueueName } from '@portal/contracts';
import { RedisConnections } from '@portal/redis';
import { QueueService } from './queue.service';
import { JobHandler, pickHandlers, type JobHandlerOf } from './job-handler.decorator';
import { PortalMetrics } from './observability/portal-metrics.service';
import { UploadHandOff } from './upload-handoff';

/** Finds the `@JobHandler` providers of the queues a worker consumes and starts consuming. */
@Injectable()
export class WorkerHost {
  constructor(
    @Inject(QueueService) private readonly queues: QueueService,
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
  ) {}

  start(queues: QueueName[]): void {
    const found = this.discovery
      .getProviders({ metadataKey: JobHandler.KEY })
      .filter((wrapper) => wrapper.instance)
      .map((wrapper) => ({
        jobName: this.discovery.getMetadataByDecorator(JobHandler, wrapper) as JobName,
        handler: wrapper.instance as JobHandlerOf<JobName>,
        className: wrapper.name as string,
      }));
    const jobNames = (Object.keys(JOB_QUEUE) as JobName[]).filter((name) => queues.includes(JOB_QUEUE[name]));
    const handlers = pickHandlers(jobNames, found);
    this.queues.consume(queues, (name, data, context) => {
      const handler = handlers.get(name);
      if (!handler) throw new Error(`No handler for job "${name}"`);
      return handler.handle(data as never, context);
    });
  }
}

@Module({})
export class QueueModule {
  /** On the connections of `RedisModule`, which the app imports. */
  static forRoot(options: { prefix: string }): DynamicModule {
    return {
      module: QueueModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [
        { provide: PortalMetrics, useFactory: () => new PortalMetrics() },
        {
          provide: QueueService,
          useFactory: (redis: RedisConnections, metrics: PortalMetrics) =>
            new QueueService({ redis, prefix: options.prefix }, metrics),
          inject: [RedisConnections, PortalMetrics],
        },
        {
          provide: UploadHandOff,
          useFactory: (redis: RedisConnections) => new UploadHandOff(redis, options.prefix),
          inject: [RedisConnections],
        },
        WorkerHost,
      ],
      exports: [QueueService, WorkerHost, PortalMetrics, UploadHandOff],
    };
  }
}
