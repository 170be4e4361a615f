import { Module, type DynamicModule } from '@nestjs/common';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import type { AttachmentIngestConfig } from './config';

@Module({})
export class AppModule {
  static forRoot(config: AttachmentIngestConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [DalModule.forRoot(config.databaseUrl), QueueModule.forRoot(config)],
      providers: [],
    };
  }
}
