import {
  Global,
  Inject,
  Injectable,
  Module,
  type DynamicModule,
  type OnApplicationShutdown,
} from '@nestjs/common';
import type { RedisTarget } from '@portal/contracts';
import { ConversationEvents } from './conversation-events';
import { RedisConnections } from './redis-connections';

@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(@Inject(RedisConnections) private readonly connections: RedisConnections) {}

  async onApplicationShutdown(): Promise<void> {
    await this.connections.close();
  }
}

/**
 * Provides the process's `RedisConnections` and closes them on shutdown; with `events`, the
 * conversations' event streams (`ConversationEvents`) under that prefix and retention. Import it first in the
 * root module: Nest shuts global modules down in the reverse of the order it found them, so the
 * modules that still use Redis while they stop (the queue's workers) close before it.
 */
@Global()
@Module({})
export class RedisModule {
  static forRoot(target: RedisTarget, events?: { prefix: string; retentionMs: number }): DynamicModule {
    const connections = new RedisConnections(target);
    const streams = events
      ? [
          {
            provide: ConversationEvents,
            useValue: new ConversationEvents(connections, events.prefix, events.retentionMs),
          },
        ]
      : [];
    return {
      module: RedisModule,
      providers: [{ provide: RedisConnections, useValue: connections }, RedisCloser, ...streams],
      exports: [RedisConnections, ...streams.map((s) => s.provide)],
    };
  }
}
