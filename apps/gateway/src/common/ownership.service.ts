import { Inject, Injectable } from '@nestjs/common';
import {
  ConversationRepository,
  TurnRepository,
  type Conversation,
  type ConversationWithAgent,
} from '@portal/dal';
import { type ConversationId, DomainError, type Turn, type TurnId } from '@portal/domain';
import type { Principal } from './principal.types';

/**
 * The caller's own conversations and turns. Another org's, another user's and a missing one all
 * answer the same 404, so ids reveal nothing.
 */
@Injectable()
export class OwnershipService {
  constructor(
    @Inject(ConversationRepository) private readonly conversations: ConversationRepository,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
  ) {}

  async conversation(caller: Principal, conversationId: ConversationId): Promise<Conversation> {
    const conversation = await this.conversations.getForUser(caller.orgId, caller.userId, conversationId);
    return conversation ?? notFound(conversationId);
  }

  /** The conversation with its agent, its open turn's id and the agent's catalogue for the caller, in one query. */
  async conversationWithAgent(
    caller: Principal,
    conversationId: ConversationId,
  ): Promise<ConversationWithAgent> {
    const found = await this.conversations.getWithAgent(caller.orgId, conversationId, {
      userId: caller.userId,
    });
    return found ?? notFound(conversationId);
  }

  async turn(caller: Principal, turnId: TurnId): Promise<Turn> {
    const turn = await this.turns.get(caller.orgId, turnId);
    const owned =
      turn && (await this.conversations.getForUser(caller.orgId, caller.userId, turn.conversationId));
    if (!turn || !owned) throw new DomainError('not_found', `Turn ${turnId} not found`);
    return turn;
  }
}

function notFound(conversationId: ConversationId): never {
  throw new DomainError('not_found', `Conversation ${conversationId} not found`);
}
