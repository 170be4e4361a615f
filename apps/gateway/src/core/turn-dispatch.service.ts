import type { ConversationId, OrgId, TurnId } from '@portal/domain';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { cancelChannel, QueueName, type PortalEvent } from '@portal/contracts';
import { BullMqClient, JobRecord } from '@portal/queue';
import { RedisConnections, type RedisClient, ConversationEvents } from '@portal/redis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';

/**
 * What the gateway does after a write has committed: enqueue the job, publish the events, signal
 * a cancel. Postgres already holds the truth, so a failure here is logged, not answered with an
 * error: the orchestrator's reconciler re-enqueues open turns, and clients reload the transcript.
 */
@Injectable()
export class TurnDispatchService {
  private readonly logger = new Logger('TurnDispatch');
  private readonly publisher: RedisClient;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(BullMqClient) private readonly queues: BullMqClient,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
    @Inject(RedisConnections) redis: RedisConnections,
  ) {
    this.publisher = redis.shared('state');
  }

  /** `run-turn` with the protocol's job id `run-turn:<turnId>:<reason>` (one job per reason). */
  runTurn(orgId: OrgId, turnId: TurnId, reason: 'open' | 'cancel' | `answer-${string}`): Promise<void> {
    return this.safely(`enqueue run-turn ${turnId} (${reason})`, () =>
      lastValueFrom(
        this.queues.emit(
          QueueName.Turns,
          new JobRecord({ orgId, turnId }, { jobId: `run-turn:${turnId}:${reason}` }),
        ),
      ),
    );
  }

  /** Publishes in order, in one round trip. */
  publish(conversationId: ConversationId, events: PortalEvent[]): Promise<void> {
    return this.safely(`publish to conversation ${conversationId}`, () =>
      this.events.publishAll(conversationId, events),
    );
  }

  cancel(turnId: TurnId): Promise<void> {
    return this.safely(`publish cancel of ${turnId}`, () =>
      this.publisher.publish(cancelChannel(this.config.prefix), turnId),
    );
  }

  /** Drops a deleted conversation's event stream. */
  forget(conversationId: ConversationId): Promise<void> {
    return this.safely(`remove the events of conversation ${conversationId}`, () =>
      this.events.remove(conversationId),
    );
  }

  private async safely(what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.logger.error(`${what} failed: ${(err as Error).message}`);
    }
  }
}
