import type { TurnId } from '@portal/domain';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CompactionRequests, type ManualCompactionInput } from '@portal/application';
import { type Conversation } from '@portal/dal';
import { BullMqClient } from '@portal/queue';
import { ConversationEvents } from '@portal/redis';
import type { Principal } from '../common/principal.types';
import { MetricsService } from '../metrics/metrics.service';

/**
 * A message that is `/compact` (SPEC 5.1 manual compaction). `CompactionRequests`
 * (@portal/application) holds the refusals of SPEC 5.3 (`compact_refused`, naming the rule) and
 * opens the compaction turn, publishes it and enqueues the `compact` job the compaction-worker runs.
 */
@Injectable()
export class CompactionRequestService {
  private readonly requests: CompactionRequests;

  constructor(
    @Inject(DataSource) dataSource: DataSource,
    @Inject(BullMqClient) queues: BullMqClient,
    @Inject(ConversationEvents) events: ConversationEvents,
    @Inject(MetricsService) private readonly metrics: MetricsService,
  ) {
    this.requests = new CompactionRequests(dataSource, queues, events);
  }

  async request(
    caller: Principal,
    conversation: Conversation,
    request: Omit<ManualCompactionInput, 'conversationId'>,
  ): Promise<{ turnId: TurnId; kind: 'compaction' }> {
    const { turn } = await this.requests.open(caller.orgId, { ...request, conversationId: conversation.id });
    this.metrics.turnOpened(turn.kind);
    return { turnId: turn.id, kind: 'compaction' };
  }
}
