import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { RedisTarget } from '@portal/contracts';
import { RedisConnections } from './redis-connections';

@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(@Inject(RedisConnections) private readonly connections: RedisConnections) {}

  async onApplicationShutdown(): Promise<void> {
    await this.connections.close();
  }
}

/**
 * Provides the process's `RedisConnections` and closes them on shutdown. Import it first in the
 * root module: Nest shuts global modules down in the reverse of the order it found them, so the
 * modules that still use Redis while they stop (the queue's workers) close before it.
 */
@Global()
@Module({})
export class RedisModule {
  static forRoot(target: RedisTarget): DynamicModule {
    return {
      module: RedisModule,
      providers: [{ provide: RedisConnections, useValue: new RedisConnections(target) }, RedisCloser],
      exports: [RedisConnections],
    };
  }
}
