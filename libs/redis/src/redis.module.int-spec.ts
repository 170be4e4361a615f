import { Global, Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { readRedisUrl } from '@portal/contracts';
import { disconnectClient, RedisConnections } from './redis-connections';
import { RedisModule } from './redis.module';

/** A global module that still needs Redis while it shuts down, as the queue's workers do. */
@Injectable()
class LastWrite implements OnApplicationShutdown {
  answered: string | null = null;

  constructor(@Inject(RedisConnections) private readonly redis: RedisConnections) {}

  async onApplicationShutdown(): Promise<void> {
    this.answered = await this.redis.shared('state').ping();
  }
}

@Global()
@Module({ providers: [LastWrite], exports: [LastWrite] })
class UsesRedisOnShutdown {}

describe('RedisModule', () => {
  it('closes every connection of the app on shutdown, after the modules imported after it', async () => {
    @Module({ imports: [RedisModule.forRoot({ url: readRedisUrl(process.env) }), UsesRedisOnShutdown] })
    class App {}
    const app = await NestFactory.createApplicationContext(App, { logger: false });
    const redis = app.get(RedisConnections);
    const shared = redis.shared('events');
    const follower = redis.dedicated('events-reader');
    expect(await shared.ping()).toBe('PONG');
    expect(await follower.ping()).toBe('PONG');

    await app.close();
    expect(app.get(LastWrite).answered).toBe('PONG');
    expect([shared.status, follower.status]).toEqual(['end', 'end']);
    expect(() => redis.dedicated('state')).toThrow(/closed/);
  });

  it('disconnects a client once: one that has ended is left alone, with no timer started', async () => {
    const redis = new RedisConnections({ url: readRedisUrl(process.env) });
    const client = redis.dedicated('events-reader');
    expect(await client.ping()).toBe('PONG');
    await disconnectClient(client);
    expect(client.status).toBe('end');

    // ioredis's disconnect of an ended client starts a 2 s timer to destroy its gone socket.
    const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const before = timers();
    await disconnectClient(client);
    await redis.close();
    expect(timers()).toBe(before);
  });
});
