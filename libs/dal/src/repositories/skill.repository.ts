import { type EntityManager, In } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { AgentSkillEntity } from '../entities/agent-skill.entity';
import { SkillEntity } from '../entities/skill.entity';
import { toSkill } from '../mappers/records.mapper';
import type { Skill } from '../records.types';

export type SkillInput = Omit<Skill, 'orgId' | 'id'>;
export type SkillPatch = Partial<Omit<SkillInput, 'slug'>>;

export class SkillRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  private get skills() {
    return this.em.getRepository(SkillEntity);
  }

  /** Creates the skill, or updates the one with the same slug in the org (its id stays). */
  async upsert(orgId: string, skill: SkillInput): Promise<Skill> {
    const [{ id }] = await this.em.query(
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
  async create(orgId: string, skill: SkillInput): Promise<Skill | null> {
    const rows: { id: string }[] = await this.em.query(
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

  async get(orgId: string, skillId: string): Promise<Skill | null> {
    if (!isUuid(skillId)) return null;
    const row = await this.skills.findOneBy({ orgId, id: skillId });
    return row && toSkill(row);
  }

  async getMany(orgId: string, skillIds: string[]): Promise<Skill[]> {
    const rows = await this.skills.findBy({ orgId, id: In(skillIds.filter(isUuid)) });
    return rows.map(toSkill);
  }

  async findBySlugs(orgId: string, slugs: string[]): Promise<Skill[]> {
    const rows = await this.skills.findBy({ orgId, slug: In(slugs) });
    return rows.map(toSkill);
  }

  async update(orgId: string, skillId: string, patch: SkillPatch): Promise<Skill | null> {
    if (!isUuid(skillId)) return null;
    if (Object.keys(patch).length) await this.skills.update({ orgId, id: skillId }, patch);
    return this.get(orgId, skillId);
  }

  /** Skills the user can see: visible to the org, or private and owned by the user. */
  async listVisible(orgId: string, userId: string): Promise<Skill[]> {
    const rows = await this.skills.find({
      where: [
        { orgId, visibility: 'org' },
        { orgId, visibility: 'private', ownerId: userId },
      ],
      order: { slug: 'ASC' },
    });
    return rows.map(toSkill);
  }

  /** The agent's catalogue for a user (SPEC 6): bound, visible, active and published, in bind order. */
  async listCatalogue(orgId: string, userId: string, agentId: string): Promise<Skill[]> {
    const rows = await this.skills
      .createQueryBuilder('s')
      .innerJoin(AgentSkillEntity, 'b', 'b.skillId = s.id AND b.orgId = s.orgId')
      .where('s.orgId = :orgId AND b.agentId = :agentId', { orgId, agentId })
      .andWhere(`s.status = 'active' AND s.published`)
      .andWhere(`(s.visibility = 'org' OR s.ownerId = :userId)`, { userId })
      .orderBy('b.position', 'ASC')
      .getMany();
    return rows.map(toSkill);
  }
}
