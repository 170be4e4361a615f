import { Inject, Module, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import {
  BLOB_STORE,
  BlobStoreModule,
  CompactionClient,
  PromptInputLoader,
  type BlobStore,
} from '@portal/application';
import { DalModule } from '@portal/dal';
import { ModelClientFactory } from '@portal/model';
import { BullMqClient, QueueModule } from '@portal/queue';
import { RedisConnections, RedisModule } from '@portal/redis';
import { DataSource } from 'typeorm';
import type { TurnOrchestratorConfig } from './config';
import { CONFIG } from './config.token';
import { TOOL_PROVIDERS } from './tools/tool-registry.service';
import { CancelListener } from './turn/cancel-listener.service';
import { CompactionGate } from './turn/compaction-gate.service';
import { ModelCaller } from './turn/model-call.service';
import { RetryPolicy } from './turn/retry-policy.service';
import { Reviewer } from './turn/reviewer.service';
import { RunTurnHandler } from './turn/run-turn.handler';
import { TitleService } from './turn/title.service';
import { TurnEventsResync } from './turn/turn-events-resync.service';
import { TurnReconciler } from './turn/turn-reconciler.service';
import { TurnRunner } from './turn/turn-runner.service';
import { TurnStore } from './turn/turn-store.service';

@Module({})
export class AppModule implements OnApplicationShutdown {
  constructor(
    @Inject(ModelClientFactory) private readonly models: ModelClientFactory,
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(CompactionClient) private readonly compactions: CompactionClient,
  ) {}

  static forRoot(config: TurnOrchestratorConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // First, so that it closes last.
        RedisModule.forRoot(config.redis, { prefix: config.prefix, retentionMs: config.eventRetentionMs }),
        DalModule.forRoot(config),
        BlobStoreModule.forRoot(config),
        QueueModule.forRoot(config),
      ],
      providers: [
        { provide: CONFIG, useValue: config },
        {
          provide: ModelClientFactory,
          useFactory: () =>
            new ModelClientFactory({
              env: config.env,
              timeoutMs: config.modelTimeoutMs,
              idleTimeoutMs: config.modelIdleTimeoutMs,
            }),
        },
        {
          provide: PromptInputLoader,
          useFactory: (dataSource: DataSource, blobs: BlobStore) => new PromptInputLoader(dataSource, blobs),
          inject: [DataSource, BLOB_STORE],
        },
        {
          provide: CompactionClient,
          useFactory: (dataSource: DataSource, queues: BullMqClient, redis: RedisConnections) =>
            new CompactionClient(dataSource, queues, { redis, prefix: config.prefix }),
          inject: [DataSource, BullMqClient, RedisConnections],
        },
        ...TOOL_PROVIDERS,
        CancelListener,
        CompactionGate,
        ModelCaller,
        RetryPolicy,
        Reviewer,
        TitleService,
        TurnStore,
        TurnEventsResync,
        TurnRunner,
        TurnReconciler,
      ],
      controllers: [RunTurnHandler],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.compactions.close();
    await this.models.close();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
