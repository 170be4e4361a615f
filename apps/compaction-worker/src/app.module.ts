import { Module, type DynamicModule } from '@nestjs/common';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import type { CompactionWorkerConfig } from './config';

@Module({})
export class AppModule {
  static forRoot(config: CompactionWorkerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [DalModule.forRoot(config.databaseUrl), QueueModule.forRoot(config)],
      providers: [],
    };
  }
}
