import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ConversationEvents, QueueService } from '@portal/queue';

/**
 * Closes the Redis connections the queue library opens but does not close itself, after the HTTP
 * server (DalModule closes the database pool).
 */
@Injectable()
export class LifecycleService implements OnApplicationShutdown {
  constructor(
    @Inject(QueueService) private readonly queues: QueueService,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.queues.close();
    await this.events.close();
  }
}
