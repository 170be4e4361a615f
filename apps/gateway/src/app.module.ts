import { Module, type DynamicModule } from '@nestjs/common';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import type { GatewayConfig } from './config';
import { HealthController } from './health/health.controller';

@Module({})
export class AppModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [DalModule.forRoot(config.databaseUrl), QueueModule.forRoot(config)],
      controllers: [HealthController],
    };
  }
}
