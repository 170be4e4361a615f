import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { ConversationEvents } from '@portal/queue';

/**
 * Closes the event stream's Redis connections, which the queue library opens but does not close
 * itself, after the HTTP server (DalModule closes the database pool, the BullMQ client itself).
 */
@Injectable()
export class LifecycleService implements OnApplicationShutdown {
  constructor(@Inject(ConversationEvents) private readonly events: ConversationEvents) {}

  async onApplicationShutdown(): Promise<void> {
    await this.events.close();
  }
}
