import type { UserId } from '@portal/domain';
import type { Skill } from '@portal/dal';
import { isSelectable, isVisibleTo } from '@portal/prompt';

// The rules live in @portal/prompt; a skill without an owner is nobody's private skill.
const forRules = (skill: Skill) => ({ ...skill, ownerId: skill.ownerId ?? '' });

/** Org-wide, or the user's own private skill (SPEC 6). */
export function canSee(skill: Skill, userId: UserId): boolean {
  return isVisibleTo(forRules(skill), userId);
}

/** What `/slug` may select: visible and active, bound or not, published or not (SPEC 6). */
export function canSelect(skill: Skill, userId: UserId): boolean {
  return isSelectable(forRules(skill), userId);
}
