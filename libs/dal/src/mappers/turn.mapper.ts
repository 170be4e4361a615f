import type { Turn } from '@portal/domain';
import type { TurnEntity } from '../entities/turn.entity';

export function toTurn(e: Pick<TurnEntity, keyof Turn>): Turn {
  return {
    id: e.id,
    conversationId: e.conversationId,
    n: e.n,
    kind: e.kind,
    status: e.status,
    effort: e.effort,
    model: e.model,
    contextTokens: e.contextTokens,
    selectedSkillIds: e.selectedSkillIds,
    catalogueSkillIds: e.catalogueSkillIds,
    error: e.error,
  };
}
