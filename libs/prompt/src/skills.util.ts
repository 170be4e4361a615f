import type { UserId } from '@portal/domain';
/** SPEC section 6: leading `/slug` selections, `/compact`, and the skill catalogue. */

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,63}$/;
/** `/compact` is a command, never a skill. */
export const COMPACT_COMMAND = 'compact';

export function isValidSlug(slug: string): boolean {
  return SLUG_PATTERN.test(slug) && slug !== COMPACT_COMMAND;
}

export interface LeadingSlugs {
  /** Distinct slugs in the order typed. */
  slugs: string[];
  /** The text the model reads: what follows the slug run, leading whitespace removed. */
  rest: string;
  /** The message is `/compact`, optionally followed by instructions. */
  isCompact: boolean;
  /** What follows `/compact`, trimmed; null when nothing does or when not a compaction. */
  compactInstructions: string | null;
}

const LEADING_TOKEN = /^\/(\S*)(?:\s+|$)/;

/**
 * Splits the leading `/slug` tokens off a message. The run ends at the first token that is not
 * `/` followed by a valid slug, so `/Fact-check` or `/a,b` stay in the text the model reads.
 */
export function parseLeadingSlugs(text: string): LeadingSlugs {
  let rest = text.trimStart();
  const first = LEADING_TOKEN.exec(rest);
  if (first && first[1] === COMPACT_COMMAND) {
    const instructions = rest.slice(first[0].length).trim();
    return { slugs: [], rest: instructions, isCompact: true, compactInstructions: instructions || null };
  }
  const slugs: string[] = [];
  for (let m = first; m && isValidSlug(m[1]); m = LEADING_TOKEN.exec(rest)) {
    if (!slugs.includes(m[1])) slugs.push(m[1]);
    rest = rest.slice(m[0].length);
  }
  return { slugs, rest, isCompact: false, compactInstructions: null };
}

/** What the catalogue needs to know of a skill bound to the agent. */
export interface SkillForCatalogue {
  id: string;
  slug: string;
  description: string;
  visibility: 'org' | 'private';
  ownerId: string;
  status: 'active' | 'inactive';
  published: boolean;
}

export interface CatalogueEntry {
  slug: string;
  description: string;
}

/** Whether the user may see the skill at all: org-wide, or their own private one. */
export function isVisibleTo(
  skill: Pick<SkillForCatalogue, 'visibility' | 'ownerId'>,
  userId: UserId,
): boolean {
  return skill.visibility === 'org' || skill.ownerId === userId;
}

/** Whether `/slug` may select the skill: visible and active; bound or not, published or not. */
export function isSelectable(
  skill: Pick<SkillForCatalogue, 'visibility' | 'ownerId' | 'status'>,
  userId: UserId,
): boolean {
  return isVisibleTo(skill, userId) && skill.status === 'active';
}

/** One catalogue line: `slug — one sentence` (the description kept on one line). */
export function catalogueLine(entry: CatalogueEntry): string {
  return `${entry.slug} — ${entry.description.replace(/\s+/g, ' ').trim()}`;
}

export function renderCatalogue(entries: readonly CatalogueEntry[]): string {
  return entries.map(catalogueLine).join('\n');
}
