import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { TraceEntryEntity } from '../entities/trace-entry.entity';
import { toTraceEntry } from '../mappers/records.mapper';
import type { TraceEntry } from '../records.types';

export class TraceRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** The turn's one SKILL_SELECT entry; recording it again keeps the first. */
  async addSkillSelect(orgId: string, turnId: string, skillIds: string[]): Promise<void> {
    if (!isUuid(turnId)) return;
    await this.em.query(
      `INSERT INTO trace_entries (org_id, turn_id, kind, skill_ids)
       SELECT t.org_id, t.id, 'SKILL_SELECT', $3 FROM turns t WHERE t.org_id = $1 AND t.id = $2
       ON CONFLICT (turn_id) WHERE kind = 'SKILL_SELECT' DO NOTHING`,
      [orgId, turnId, skillIds],
    );
  }

  async listForTurn(orgId: string, turnId: string): Promise<TraceEntry[]> {
    if (!isUuid(turnId)) return [];
    const rows = await this.em
      .getRepository(TraceEntryEntity)
      .find({ where: { orgId, turnId }, order: { at: 'ASC', id: 'ASC' } });
    return rows.map(toTraceEntry);
  }
}
