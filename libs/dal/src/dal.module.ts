import {
  Inject,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
  type Provider,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { createServiceDataSource } from './data-source';
import { AgentRepository } from './repositories/agent.repository';
import { AttachmentRepository } from './repositories/attachment.repository';
import { BlockRepository } from './repositories/block.repository';
import { ConversationRepository } from './repositories/conversation.repository';
import { OrgRepository } from './repositories/org.repository';
import { SkillRepository } from './repositories/skill.repository';
import { ToolResultRepository } from './repositories/tool-result.repository';
import { TraceRepository } from './repositories/trace.repository';
import { TurnRepository } from './repositories/turn.repository';
import { TurnLeaseRepository } from './repositories/turn-lease.repository';
import { UsageRepository } from './repositories/usage.repository';
import { UserRepository } from './repositories/user.repository';
import { WindowRepository } from './repositories/window.repository';

export const REPOSITORIES = [
  AgentRepository,
  AttachmentRepository,
  BlockRepository,
  ConversationRepository,
  OrgRepository,
  SkillRepository,
  ToolResultRepository,
  TraceRepository,
  TurnRepository,
  TurnLeaseRepository,
  UsageRepository,
  UserRepository,
  WindowRepository,
] as const;

/**
 * The initialised DataSource and every repository, for the apps' dependency injection. The
 * BlobStore is `@portal/application`'s BlobStoreModule.
 */
@Module({})
export class DalModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }

  /** `databasePoolSize`: DATABASE_POOL_SIZE, read by the app's config. */
  static forRoot(config: { databaseUrl: string; databasePoolSize: number }): DynamicModule {
    const { databaseUrl, databasePoolSize: poolSize } = config;
    const dataSource: Provider = {
      provide: DataSource,
      useFactory: () => createServiceDataSource(databaseUrl, poolSize).initialize(),
    };
    const repositories: Provider[] = REPOSITORIES.map((Repository) => ({
      provide: Repository,
      useFactory: (ds: DataSource) => new Repository(ds),
      inject: [DataSource],
    }));
    return {
      module: DalModule,
      global: true,
      providers: [dataSource, ...repositories],
      exports: [DataSource, ...REPOSITORIES],
    };
  }
}
