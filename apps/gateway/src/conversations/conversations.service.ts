import { Inject, Injectable, Logger } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@portal/application';
import {
  BlockRepository,
  ConversationRepository,
  TurnRepository,
  UsageRepository,
  type UsageTotals,
} from '@portal/dal';
import { type AgentId, type ConversationId, DomainError, type Turn } from '@portal/domain';
import { cutText } from '@portal/prompt';
import { OwnershipService } from '../common/ownership.service';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import type { Principal } from '../common/principal.types';
import { messageView, type MessageView } from './transcript.util';

/** The most conversations a search answers. */
export const SEARCH_RESULTS = 50;
/** The longest snippet, in characters. */
const SNIPPET_CHARS = 200;

export interface ConversationSummary {
  id: string;
  agentId: AgentId;
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

export interface ConversationHitView extends ConversationSummary {
  /** Words around the match, plain text on one line. */
  snippet: string;
}

export interface ConversationView {
  id: string;
  agentId: AgentId;
  title: string | null;
  turns: ConversationTurnView[];
}

const NO_USAGE: UsageTotals = { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: 0 };

@Injectable()
export class ConversationsService {
  private readonly logger = new Logger('Conversations');

  constructor(
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(ConversationRepository) private readonly conversations: ConversationRepository,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(BlockRepository) private readonly blocks: BlockRepository,
    @Inject(UsageRepository) private readonly usage: UsageRepository,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
  ) {}

  async create(caller: Principal, agentId: AgentId): Promise<{ id: string }> {
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

  /** The caller's conversations matching `query` (title or message text), most relevant first. */
  async search(caller: Principal, query: string): Promise<ConversationHitView[]> {
    // Tone marks typed decomposed would not match the composed form keyboards and models write.
    const hits = await this.conversations.search(
      caller.orgId,
      caller.userId,
      query.normalize('NFC'),
      SEARCH_RESULTS,
    );
    return hits.map((c) => ({
      id: c.id,
      agentId: c.agentId,
      title: c.title,
      updatedAt: c.updatedAt.toISOString(),
      snippet: cutText(c.snippet.replace(/\s+/g, ' ').trim(), SNIPPET_CHARS),
    }));
  }

  async get(caller: Principal, conversationId: ConversationId): Promise<ConversationView> {
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

  async rename(caller: Principal, conversationId: ConversationId, title: string): Promise<ConversationView> {
    const conversation = await this.owned.conversation(caller, conversationId);
    await this.conversations.rename(caller.orgId, caller.userId, conversation.id, title);
    return this.get(caller, conversation.id);
  }

  /**
   * Cuts off the open turn as cancel does (its worker stops at once), then deletes the
   * conversation with everything it holds, then what lives outside Postgres: the attachments'
   * bytes and the event stream. Those go after the commit, as bytes go before a row on upload: a
   * failure there leaves orphans, never a row without its bytes.
   */
  async delete(caller: Principal, conversationId: ConversationId): Promise<void> {
    const conversation = await this.owned.conversation(caller, conversationId);
    const active = await this.turns.getActive(caller.orgId, conversation.id);
    if (active && (await this.turns.requestCancel(caller.orgId, active.id))) {
      await this.dispatch.cancel(active.id);
    }
    const attachmentIds = await this.conversations.deleteForUser(
      caller.orgId,
      caller.userId,
      conversation.id,
    );
    if (!attachmentIds) throw new DomainError('not_found', `Conversation ${conversationId} not found`);
    const removals = await Promise.allSettled(
      attachmentIds.map((attachmentId) => this.blobs.removeAll({ orgId: caller.orgId, attachmentId })),
    );
    for (const failed of removals.filter((r) => r.status === 'rejected')) {
      this.logger.error(`conversation ${conversation.id}: bytes left behind (${String(failed.reason)})`);
    }
    await this.dispatch.forget(conversation.id);
  }

  async messages(caller: Principal, conversationId: ConversationId): Promise<MessageView[]> {
    const conversation = await this.owned.conversation(caller, conversationId);
    const messages = await this.blocks.listConversationMessages(caller.orgId, conversation.id);
    return messages.map(messageView);
  }
}
