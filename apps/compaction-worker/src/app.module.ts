import { Inject, Injectable, Module, type DynamicModule, type OnModuleDestroy } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DalModule } from '@portal/dal';
import { ModelClientFactory } from '@portal/model';
import { QueueModule } from '@portal/queue';
import { observeModelCall, PortalMetrics } from '@portal/observability';
import { ConversationEvents, RedisModule } from '@portal/redis';
import { CompactHandler } from './compact.handler';
import { CompactionService } from './compaction.service';
import type { CompactionWorkerConfig } from './config';

/** Closes the model clients (and the built-in local model) on shutdown. */
@Injectable()
class Closer implements OnModuleDestroy {
  constructor(@Inject(ModelClientFactory) private readonly models: ModelClientFactory) {}

  async onModuleDestroy(): Promise<void> {
    await this.models.close();
  }
}

@Module({})
export class AppModule {
  static forRoot(config: CompactionWorkerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // First, so that it closes last.
        RedisModule.forRoot(config.redis, { prefix: config.prefix, retentionMs: config.eventRetentionMs }),
        DalModule.forRoot(config),
        QueueModule.forRoot(config),
      ],
      providers: [
        { provide: ModelClientFactory, useFactory: () => new ModelClientFactory({ env: config.env }) },
        {
          provide: CompactionService,
          useFactory: (
            db: DataSource,
            events: ConversationEvents,
            factory: ModelClientFactory,
            metrics: PortalMetrics,
          ) => {
            // The summary calls, timed and their tokens counted.
            const models: Pick<ModelClientFactory, 'streamChat'> = {
              streamChat: (entry, request, options) =>
                observeModelCall(
                  metrics,
                  { model: entry.id, kind: 'compaction' },
                  factory.streamChat(entry, request, options),
                ),
            };
            return new CompactionService({
              db,
              events,
              models,
              catalogue: config.models,
              limits: config.limits,
            });
          },
          inject: [DataSource, ConversationEvents, ModelClientFactory, PortalMetrics],
        },
        Closer,
      ],
      controllers: [CompactHandler],
    };
  }
}
