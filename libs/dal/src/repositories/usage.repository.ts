import type { ConversationId, OrgId, TurnId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { UsageRowEntity } from '../entities/usage-row.entity';
import { toUsageRow } from '../mappers/records.mapper';
import type { UsageRow } from '../records.types';

/**
 * The INSERT of one usage row of a turn, once per `call_key`; the row's values are the parameters
 * `first` … `first + 6` (kind, model, input, output and cached tokens, cost, call key).
 */
export function insertUsageSql(p: { org: string; turn: string; first: number; when?: string }): string {
  const v = Array.from({ length: 7 }, (_, i) => `$${p.first + i}`).join(', ');
  return `INSERT INTO usage_rows (org_id, turn_id, kind, model, input_tokens, output_tokens, cached_tokens, cost, call_key)
    SELECT t.org_id, t.id, ${v} FROM turns t
    WHERE t.org_id = ${p.org} AND t.id = ${p.turn}${p.when ? ` AND ${p.when}` : ''}
    ON CONFLICT (turn_id, call_key) DO NOTHING`;
}

export type UsageTotals = Pick<UsageRow, 'inputTokens' | 'outputTokens' | 'cachedTokens' | 'cost'>;

export class UsageRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /**
   * Records one model call's usage. With `callKey` (unique per turn) a repeated job records it
   * once. Returns false when the turn is not the org's or the key was already recorded.
   */
  async add(orgId: OrgId, row: UsageRow & { callKey?: string }): Promise<boolean> {
    if (!isUuid(row.turnId)) return false;
    const { rows: inserted } = await runSql(
      this.em,
      `${insertUsageSql({ org: '$1', turn: '$2', first: 3 })} RETURNING id`,
      [
        orgId,
        row.turnId,
        row.kind,
        row.model,
        row.inputTokens,
        row.outputTokens,
        row.cachedTokens,
        row.cost,
        row.callKey ?? null,
      ],
      { prepared: true },
    );
    return inserted.length > 0;
  }

  /** Each turn's usage summed (tokens and cost of all its calls), for the turns of a conversation that have some. */
  async totalsForConversation(
    orgId: OrgId,
    conversationId: ConversationId,
  ): Promise<Map<string, UsageTotals>> {
    if (!isUuid(conversationId)) return new Map();
    const { rows } = await runSql<UsageTotals & { turnId: TurnId }>(
      this.em,
      `SELECT u.turn_id AS "turnId", sum(u.input_tokens)::int AS "inputTokens",
         sum(u.output_tokens)::int AS "outputTokens", sum(u.cached_tokens)::int AS "cachedTokens",
         sum(u.cost)::float8 AS cost
       FROM usage_rows u JOIN turns t ON t.id = u.turn_id
       WHERE t.org_id = $1 AND t.conversation_id = $2 AND u.org_id = $1
       GROUP BY u.turn_id`,
      [orgId, conversationId],
    );
    return new Map(rows.map(({ turnId, ...totals }) => [turnId, totals]));
  }

  /** In the order recorded. */
  async listForTurn(orgId: OrgId, turnId: TurnId): Promise<UsageRow[]> {
    if (!isUuid(turnId)) return [];
    const rows = await this.em
      .getRepository(UsageRowEntity)
      .find({ where: { orgId, turnId }, order: { createdAt: 'ASC', id: 'ASC' } });
    return rows.map(toUsageRow);
  }
}
