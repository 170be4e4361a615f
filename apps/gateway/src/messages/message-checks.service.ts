import { Inject, Injectable } from '@nestjs/common';
import { AttachmentRepository, SkillRepository, type Skill } from '@portal/dal';
import { type AttachmentManifest, type ConversationId, DomainError } from '@portal/domain';
import { findModel } from '@portal/model';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { canSelect } from '../skills/skill-access.util';

/** SPEC 2, checks before a turn opens; each throws the API's error and records nothing. */
@Injectable()
export class MessageChecksService {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(SkillRepository) private readonly skills: SkillRepository,
    @Inject(AttachmentRepository) private readonly attachments: AttachmentRepository,
  ) {}

  /** 1. Each leading `/slug` names a skill of the org the caller can see that is active. */
  async selectSkills(caller: Principal, slugs: string[]): Promise<Skill[]> {
    if (!slugs.length) return [];
    const found = await this.skills.findBySlugs(caller.orgId, slugs);
    return slugs.map((slug) => {
      const skill = found.find((s) => s.slug === slug);
      if (!skill || !canSelect(skill, caller.userId)) {
        throw new DomainError(
          'skill_rejected',
          `Skill /${slug} cannot be used: no active skill by that name is visible to you`,
          {
            slug,
          },
        );
      }
      return skill;
    });
  }

  /**
   * 2. Each attachment is one the caller uploaded in this org, to this conversation or to none yet.
   * Returns their manifests in the order given.
   */
  async attachmentsOf(
    caller: Principal,
    conversationId: ConversationId,
    ids: string[],
  ): Promise<AttachmentManifest[]> {
    if (!ids.length) return [];
    const scopes = await this.attachments.getScopes(caller.orgId, ids);
    for (const id of ids) {
      const scope = scopes.find((s) => s.id === id);
      const usable =
        scope?.userId === caller.userId &&
        (scope.conversationId === null || scope.conversationId === conversationId);
      if (!usable)
        throw new DomainError('attachment_not_found', `Attachment ${id} not found`, { attachmentId: id });
    }
    return this.attachments.getManifests(caller.orgId, ids);
  }

  /** 3. A picture needs a model whose catalogue entry can see. */
  vision(modelId: string, manifests: AttachmentManifest[]): void {
    if (manifests.some((m) => m.kind === 'picture') && !findModel(this.config.catalogue, modelId)?.vision) {
      throw new DomainError('model_cannot_see', `Model ${modelId} cannot see pictures`, { model: modelId });
    }
  }
}
