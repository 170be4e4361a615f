import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import IORedis from 'ioredis';
import { cancelChannel, type PortalEvent } from '@portal/contracts';
import { ConversationEvents, QueueService } from '@portal/queue';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';

/**
 * What the gateway does after a write has committed: enqueue the job, publish the events, signal
 * a cancel. Postgres already holds the truth, so a failure here is logged, not answered with an
 * error: the orchestrator's reconciler re-enqueues open turns, and clients reload the transcript.
 */
@Injectable()
export class TurnDispatchService implements OnApplicationShutdown {
  private readonly logger = new Logger('TurnDispatch');
  private readonly publisher: IORedis;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(QueueService) private readonly queues: QueueService,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
  ) {
    this.publisher = new IORedis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
  }

  /** `run-turn` with the protocol's job id `run-turn:<turnId>:<reason>` (one job per reason). */
  runTurn(orgId: string, turnId: string, reason: 'open' | 'cancel' | `answer-${string}`): Promise<void> {
    return this.safely(`enqueue run-turn ${turnId} (${reason})`, () =>
      this.queues.enqueue('run-turn', { orgId, turnId }, { jobId: `run-turn:${turnId}:${reason}` }),
    );
  }

  /** Publishes in order, in one round trip. */
  publish(conversationId: string, events: PortalEvent[]): Promise<void> {
    return this.safely(`publish to conversation ${conversationId}`, () =>
      this.events.publishAll(conversationId, events),
    );
  }

  cancel(turnId: string): Promise<void> {
    return this.safely(`publish cancel of ${turnId}`, () =>
      this.publisher.publish(cancelChannel(this.config.prefix), turnId),
    );
  }

  /** Drops a deleted conversation's event stream. */
  forget(conversationId: string): Promise<void> {
    return this.safely(`remove the events of conversation ${conversationId}`, () =>
      this.events.remove(conversationId),
    );
  }

  async onApplicationShutdown(): Promise<void> {
    this.publisher.disconnect();
  }

  private async safely(what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.logger.error(`${what} failed: ${(err as Error).message}`);
    }
  }
}
