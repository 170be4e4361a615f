import type { AgentId, OrgId, UserId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { SkillEntity } from '../entities/skill.entity';
import type { Skill } from '../records.types';

export type SkillInput = Omit<Skill, 'orgId' | 'id'>;
export type SkillPatch = Partial<Omit<SkillInput, 'slug'>>;

/** A `skills` row aliased `s` as a `Skill`. */
const SKILL_COLUMNS = `s.org_id AS "orgId", s.id, s.slug, s.name, s.description, s.instructions,
  s.visibility, s.owner_id AS "ownerId", s.status, s.published`;

/**
 * The catalogue rule (SPEC 6) as SQL, for `listCatalogue` and the reads that embed it: the skills
 * `s` bound `b` to the agent, visible to the user, active and published (order by `b.position`).
 * The arguments are SQL expressions (parameters or columns) of the org, the agent and the user.
 */
export function catalogueSkills(org: string, agent: string, user: string): string {
  return `skills s JOIN agent_skills b ON b.skill_id = s.id AND b.org_id = s.org_id
    WHERE s.org_id = ${org} AND b.agent_id = ${agent} AND s.status = 'active' AND s.published
      AND (s.visibility = 'org' OR s.owner_id = ${user})`;
}

export class SkillRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  private get skills() {
    return this.em.getRepository(SkillEntity);
  }

  /** Creates the skill, or updates the one with the same slug in the org (its id stays). */
  async upsert(orgId: OrgId, skill: SkillInput): Promise<Skill> {
    const {
      rows: [{ id }],
    } = await runSql<{ id: string }>(
      this.em,
      `INSERT INTO skills (org_id, slug, name, description, instructions, visibility, owner_id, status, published)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (org_id, slug) DO UPDATE SET
         name = EXCLUDED.name, description = EXCLUDED.description, instructions = EXCLUDED.instructions,
         visibility = EXCLUDED.visibility, owner_id = EXCLUDED.owner_id, status = EXCLUDED.status,
         published = EXCLUDED.published, updated_at = now()
       RETURNING id`,
      [
        orgId,
        skill.slug,
        skill.name,
        skill.description,
        skill.instructions,
        skill.visibility,
        skill.ownerId,
        skill.status,
        skill.published,
      ],
    );
    return { ...skill, orgId, id };
  }

  /** Inserts a new skill; null when the org already has one with this slug (nothing is changed). */
  async create(orgId: OrgId, skill: SkillInput): Promise<Skill | null> {
    const { rows } = await runSql<{ id: string }>(
      this.em,
      `INSERT INTO skills (org_id, slug, name, description, instructions, visibility, owner_id, status, published)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT (org_id, slug) DO NOTHING RETURNING id`,
      [
        orgId,
        skill.slug,
        skill.name,
        skill.description,
        skill.instructions,
        skill.visibility,
        skill.ownerId,
        skill.status,
        skill.published,
      ],
    );
    return rows.length ? { ...skill, orgId, id: rows[0].id } : null;
  }

  async get(orgId: OrgId, skillId: string): Promise<Skill | null> {
    if (!isUuid(skillId)) return null;
    const {
      rows: [row],
    } = await runSql<Skill>(
      this.em,
      `SELECT ${SKILL_COLUMNS} FROM skills s WHERE s.org_id = $1 AND s.id = $2`,
      [orgId, skillId],
    );
    return row ?? null;
  }

  async getMany(orgId: OrgId, skillIds: string[]): Promise<Skill[]> {
    const { rows } = await runSql<Skill>(
      this.em,
      `SELECT ${SKILL_COLUMNS} FROM skills s WHERE s.org_id = $1 AND s.id = ANY($2::uuid[])`,
      [orgId, skillIds.filter(isUuid)],
    );
    return rows;
  }

  async findBySlugs(orgId: OrgId, slugs: string[]): Promise<Skill[]> {
    const { rows } = await runSql<Skill>(
      this.em,
      `SELECT ${SKILL_COLUMNS} FROM skills s WHERE s.org_id = $1 AND s.slug = ANY($2::text[])`,
      [orgId, slugs],
    );
    return rows;
  }

  async update(orgId: OrgId, skillId: string, patch: SkillPatch): Promise<Skill | null> {
    if (!isUuid(skillId)) return null;
    if (Object.keys(patch).length) await this.skills.update({ orgId, id: skillId }, patch);
    return this.get(orgId, skillId);
  }

  /** Skills the user can see: visible to the org, or private and owned by the user. */
  async listVisible(orgId: OrgId, userId: UserId): Promise<Skill[]> {
    const { rows } = await runSql<Skill>(
      this.em,
      `SELECT ${SKILL_COLUMNS} FROM skills s
       WHERE s.org_id = $1 AND (s.visibility = 'org' OR (s.visibility = 'private' AND s.owner_id = $2))
       ORDER BY s.slug`,
      [orgId, userId],
    );
    return rows;
  }

  /** The agent's catalogue for a user (SPEC 6): bound, visible, active and published, in bind order. */
  async listCatalogue(orgId: OrgId, userId: UserId, agentId: AgentId): Promise<Skill[]> {
    const { rows } = await runSql<Skill>(
      this.em,
      `SELECT ${SKILL_COLUMNS} FROM ${catalogueSkills('$1', '$2', '$3')} ORDER BY b.position`,
      [orgId, agentId, userId],
      { prepared: true },
    );
    return rows;
  }
}
