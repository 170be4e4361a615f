import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { QueueService } from '@portal/queue';

/**
 * Closes the queues after the HTTP server, before RedisModule closes the connections they use
 * (DalModule closes the database pool).
 */
@Injectable()
export class LifecycleService implements OnApplicationShutdown {
  constructor(@Inject(QueueService) private readonly queues: QueueService) {}

  async onApplicationShutdown(): Promise<void> {
    await this.queues.close();
  }
}
