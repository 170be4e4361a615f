import type { ConversationId } from '@portal/domain';
import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { BLOB_STORE, PromptInputLoader, type BlobStore } from '@portal/application';
import { assemblePrompt, type LayerReport } from '@portal/prompt';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';

export interface PromptPreview {
  model: string;
  contextWindow: number;
  /** Share of the context window at which a call compacts first. */
  compactAt: number;
  /** The projected input: the sum of the layers (tool schemas and framing count to the portal floor). */
  totalTokens: number;
  /** Each layer's messages as the next call sends them (role and content), and their tokens. */
  layers: LayerReport[];
}

/**
 * What the next model call of a conversation would read before a new message, assembled exactly as
 * the orchestrator assembles it (same loader, same `assemblePrompt`), without calling a model.
 */
@Injectable()
export class PromptPreviewService {
  private readonly loader: PromptInputLoader;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(DataSource) dataSource: DataSource,
    @Inject(BLOB_STORE) blobs: BlobStore,
  ) {
    this.loader = new PromptInputLoader(dataSource, blobs);
  }

  async preview(caller: Principal, conversationId: ConversationId): Promise<PromptPreview> {
    const conversation = await this.owned.conversation(caller, conversationId);
    const { model, assemble } = await this.loader.forPreview(caller.orgId, conversation.id, this.config);
    const prompt = assemblePrompt(assemble);
    const layers = prompt.layers.filter((l) => l.messages.length > 0);
    return {
      model: model.id,
      contextWindow: model.contextWindow,
      compactAt: model.compactAt ?? this.config.limits.COMPACT_AT,
      totalTokens: layers.reduce((sum, l) => sum + l.tokens, 0),
      layers,
    };
  }
}
