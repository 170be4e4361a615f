import type { OrgId, TurnId } from '@portal/domain';
import { randomBytes } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { ToolResultEntity } from '../entities/tool-result.entity';
import { DalError } from '../errors';
import { toToolResult } from '../mappers/records.mapper';
import type { ToolResult } from '../records.types';

export function newToolResultRef(): string {
  return `tr_${randomBytes(8).toString('hex')}`;
}

export class ToolResultRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** Stores a call's whole result; idempotent per (turn, call id): a second save returns the first. */
  async save(orgId: OrgId, input: { turnId: TurnId; callId: string; content: string }): Promise<ToolResult> {
    if (isUuid(input.turnId)) {
      await runSql(
        this.em,
        `INSERT INTO tool_results (ref, org_id, conversation_id, turn_id, call_id, content)
         SELECT $3, t.org_id, t.conversation_id, t.id, $4, $5 FROM turns t WHERE t.org_id = $1 AND t.id = $2
         ON CONFLICT (turn_id, call_id) DO NOTHING`,
        [orgId, input.turnId, newToolResultRef(), input.callId, input.content],
      );
      const row = await this.em
        .getRepository(ToolResultEntity)
        .findOneBy({ orgId, turnId: input.turnId, callId: input.callId });
      if (row) return toToolResult(row);
    }
    throw new DalError('not_found', `turn ${input.turnId} not found`);
  }

  /** `ref` with or without its `ref:` prefix. */
  async get(orgId: OrgId, ref: string): Promise<ToolResult | null> {
    const row = await this.em
      .getRepository(ToolResultEntity)
      .findOneBy({ orgId, ref: ref.trim().replace(/^ref:/, '') });
    return row && toToolResult(row);
  }
}
