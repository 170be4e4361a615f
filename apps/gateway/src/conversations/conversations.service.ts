import { Inject, Injectable } from '@nestjs/common';
import {
  BlockRepository,
  ConversationRepository,
  TurnRepository,
  UsageRepository,
  type UsageTotals,
} from '@portal/dal';
import { DomainError, type Turn } from '@portal/domain';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { messageView, type MessageView } from './transcript.util';

export interface ConversationSummary {
  id: string;
  agentId: string;
  title: string | null;
  updatedAt: string;
}

/**
 * A turn as the conversation lists it: API.md's fields, then what a client shows with each turn
 * without one request per turn (why it failed, its context size, its usage summed).
 */
export type ConversationTurnView = Pick<
  Turn,
  'id' | 'n' | 'kind' | 'status' | 'effort' | 'error' | 'model' | 'contextTokens'
> & { usage: UsageTotals };

export interface ConversationView {
  id: string;
  agentId: string;
  title: string | null;
  turns: ConversationTurnView[];
}

const NO_USAGE: UsageTotals = { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: 0 };

@Injectable()
export class ConversationsService {
  constructor(
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(ConversationRepository) private readonly conversations: ConversationRepository,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(BlockRepository) private readonly blocks: BlockRepository,
    @Inject(UsageRepository) private readonly usage: UsageRepository,
  ) {}

  async create(caller: Principal, agentId: string): Promise<{ id: string }> {
    const conversation = await this.conversations.create(caller.orgId, caller.userId, agentId);
    if (!conversation) throw new DomainError('not_found', `Agent ${agentId} not found`);
    return { id: conversation.id };
  }

  async list(caller: Principal): Promise<ConversationSummary[]> {
    const conversations = await this.conversations.listForUser(caller.orgId, caller.userId);
    return conversations.map((c) => ({
      id: c.id,
      agentId: c.agentId,
      title: c.title,
      updatedAt: c.updatedAt.toISOString(),
    }));
  }

  async get(caller: Principal, conversationId: string): Promise<ConversationView> {
    const conversation = await this.owned.conversation(caller, conversationId);
    const [turns, usage] = await Promise.all([
      this.turns.listForConversation(caller.orgId, conversation.id),
      this.usage.totalsForConversation(caller.orgId, conversation.id),
    ]);
    return {
      id: conversation.id,
      agentId: conversation.agentId,
      title: conversation.title,
      turns: turns.map(({ id, n, kind, status, effort, error, model, contextTokens }) => ({
        id,
        n,
        kind,
        status,
        effort,
        error,
        model,
        contextTokens,
        usage: usage.get(id) ?? NO_USAGE,
      })),
    };
  }

  async rename(caller: Principal, conversationId: string, title: string): Promise<ConversationView> {
    const conversation = await this.owned.conversation(caller, conversationId);
    await this.conversations.rename(caller.orgId, caller.userId, conversation.id, title);
    return this.get(caller, conversation.id);
  }

  async messages(caller: Principal, conversationId: string): Promise<MessageView[]> {
    const conversation = await this.owned.conversation(caller, conversationId);
    const messages = await this.blocks.listConversationMessages(caller.orgId, conversation.id);
    return messages.map(messageView);
  }
}
