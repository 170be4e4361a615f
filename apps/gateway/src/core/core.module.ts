import { Global, Module, type DynamicModule } from '@nestjs/common';
import { OwnershipService } from '../common/ownership.service';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { MetricsService } from '../metrics/metrics.service';
import { TurnDispatchService } from './turn-dispatch.service';

const SHARED = [OwnershipService, MetricsService, TurnDispatchService];

/** What every feature module uses: the config, the event stream, ownership checks, metrics. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: GatewayConfig): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: GATEWAY_CONFIG, useValue: config }, ...SHARED],
      exports: [GATEWAY_CONFIG, ...SHARED],
    };
  }
}
