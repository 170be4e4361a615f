import type { OrgId, TurnId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { TraceEntryEntity } from '../entities/trace-entry.entity';
import { toTraceEntry } from '../mappers/records.mapper';
import type { TraceEntry } from '../records.types';

/** A turn's trace. Its SKILL_SELECT entry is written with the turn (`TurnRepository`, the statement that opens it). */
export class TraceRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  async listForTurn(orgId: OrgId, turnId: TurnId): Promise<TraceEntry[]> {
    if (!isUuid(turnId)) return [];
    const rows = await this.em
      .getRepository(TraceEntryEntity)
      .find({ where: { orgId, turnId }, order: { at: 'ASC', id: 'ASC' } });
    return rows.map(toTraceEntry);
  }
}
