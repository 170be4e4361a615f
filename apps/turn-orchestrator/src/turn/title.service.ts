import { Inject, Injectable, Logger } from '@nestjs/common';
import { BlockRepository, ConversationRepository } from '@portal/dal';
import type { Message, OrgId, Turn } from '@portal/domain';
import { findModel, ModelClientFactory, type StreamResult } from '@portal/model';
import { cleanTitle, titlePrompt } from '@portal/prompt';
import { observeModelCall, PortalMetrics } from '@portal/observability';
import { CONFIG } from '../config.token';
import type { TurnOrchestratorConfig } from '../config';
import { TurnStore } from './turn-store.service';

/**
 * Once the first turn has settled, a `summary` call on the turn's model names the conversation
 * (SPEC 3). Its usage row belongs to turn 1; it never touches `contextTokens`; a failure is logged
 * and changes nothing else.
 */
@Injectable()
export class TitleService {
  private readonly logger = new Logger(TitleService.name);

  constructor(
    @Inject(CONFIG) private readonly config: TurnOrchestratorConfig,
    @Inject(ModelClientFactory) private readonly models: ModelClientFactory,
    @Inject(ConversationRepository) private readonly conversations: ConversationRepository,
    @Inject(BlockRepository) private readonly blocks: BlockRepository,
    @Inject(TurnStore) private readonly store: TurnStore,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
  ) {}

  async afterSettle(orgId: OrgId, turn: Turn, signal?: AbortSignal): Promise<void> {
    if (turn.n !== 1 || turn.kind !== 'turn') return;
    try {
      const conversation = await this.conversations.get(orgId, turn.conversationId);
      const model = findModel(this.config.catalogue, turn.model);
      if (!conversation || conversation.title !== null || !model) return;
      const messages = await this.blocks.listTurnMessages(orgId, turn.id);
      const request = titlePrompt({ request: firstText(messages), answer: answerText(messages) });
      let result: StreamResult | null = null;
      const events = this.models.streamChat(model, { messages: request }, { signal });
      for await (const event of observeModelCall(
        this.metrics,
        { model: model.id, kind: 'summary' },
        events,
      )) {
        if (event.type === 'done') result = event.result;
      }
      if (result?.usage) {
        await this.store.recordSideCall(orgId, turn, {
          kind: 'summary',
          model,
          usage: result.usage,
          callKey: 'title',
        });
      }
      const title = cleanTitle(result?.text ?? '');
      if (title) await this.conversations.nameIfUntitled(orgId, conversation.id, title);
    } catch (err) {
      this.logger.warn(`conversation ${turn.conversationId}: no title (${(err as Error).message})`);
    }
  }
}

function firstText(messages: readonly Message[]): string {
  return (messages[0]?.blocks ?? []).flatMap((b) => (b.kind === 'text' ? [b.text] : [])).join('\n\n');
}

/** The turn's answer: its last answer text, narration left out. */
function answerText(messages: readonly Message[]): string {
  const texts = messages
    .filter((m) => m.role === 'assistant')
    .flatMap((m) => m.blocks.flatMap((b) => (b.kind === 'text' && !b.narration ? [b.text] : [])));
  return texts.at(-1) ?? '';
}
