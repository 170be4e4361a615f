import { randomUUID } from 'node:crypto';
import type { Effort, Message, TextBlock, Turn, TurnKind, TurnStatus } from '@portal/domain';
import { type EntityManager, In } from 'typeorm';
import { type Db, isPgError, isUuid, managerOf } from '../db.util';
import { TurnEntity } from '../entities/turn.entity';
import { DalError } from '../errors';
import { toTurn } from '../mappers/turn.mapper';

export interface NewTurn {
  conversationId: string;
  kind?: TurnKind;
  effort: Effort;
  model: string;
  /** The person's text as typed (leading slugs included). */
  text: string;
  attachmentIds?: string[];
  selectedSkillIds?: string[];
  catalogueSkillIds?: string[];
}

const ACTIVE: TurnStatus[] = ['queued', 'running', 'paused'];

export interface LockedTurn {
  turn: Turn;
  leaseOwner: string | null;
  cancelRequested: boolean;
}

export class TurnRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  private get turns() {
    return this.em.getRepository(TurnEntity);
  }

  /**
   * Opens a `queued` turn numbered after the conversation's last one, with the person's message
   * (one text block), in one transaction. Null when the conversation is not the org's; throws
   * DalError `turn_active` when the conversation already has a queued, running or paused turn.
   */
  async createWithUserMessage(
    orgId: string,
    input: NewTurn,
  ): Promise<{ turn: Turn; message: Message } | null> {
    if (!isUuid(input.conversationId)) return null;
    const turn: Turn = {
      id: randomUUID(),
      conversationId: input.conversationId,
      n: 0,
      kind: input.kind ?? 'turn',
      status: 'queued',
      effort: input.effort,
      model: input.model,
      contextTokens: null,
      selectedSkillIds: input.selectedSkillIds ?? [],
      catalogueSkillIds: input.catalogueSkillIds ?? [],
      error: null,
    };
    const block: TextBlock = {
      id: randomUUID(),
      seq: 1,
      kind: 'text',
      text: input.text,
      narration: false,
      steering: false,
    };
    const message: Message = {
      id: randomUUID(),
      turnId: turn.id,
      role: 'user',
      blocks: [block],
      attachmentIds: input.attachmentIds ?? [],
    };
    try {
      return await this.em.transaction(async (em) => {
        // The row lock of this update also serialises concurrent creators of the same conversation.
        const [bumped] = await em.query(
          `UPDATE conversations SET last_turn_n = last_turn_n + 1, updated_at = now()
           WHERE org_id = $1 AND id = $2 RETURNING last_turn_n AS n`,
          [orgId, input.conversationId],
        );
        if (!bumped.length) return null;
        turn.n = bumped[0].n;
        await em.query(
          `INSERT INTO turns (id, org_id, conversation_id, n, kind, status, effort, model,
             selected_skill_ids, catalogue_skill_ids)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [
            turn.id,
            orgId,
            turn.conversationId,
            turn.n,
            turn.kind,
            turn.status,
            turn.effort,
            turn.model,
            turn.selectedSkillIds,
            turn.catalogueSkillIds,
          ],
        );
        await em.query(
          `INSERT INTO messages (id, org_id, conversation_id, turn_id, seq, role, attachment_ids)
           VALUES ($1, $2, $3, $4, 1, 'user', $5)`,
          [message.id, orgId, turn.conversationId, turn.id, message.attachmentIds],
        );
        await em.query(
          `INSERT INTO blocks (id, org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
           VALUES ($1, $2, $3, $4, $5, $6, 1, 'text', $7)`,
          [
            block.id,
            orgId,
            turn.conversationId,
            turn.id,
            turn.n,
            message.id,
            JSON.stringify({ text: block.text, narration: false, steering: false }),
          ],
        );
        return { turn, message };
      });
    } catch (err) {
      if (isPgError(err, '23505', 'turns_one_active_idx')) {
        throw new DalError('turn_active', `conversation ${input.conversationId} already has an open turn`);
      }
      throw err;
    }
  }

  async get(orgId: string, turnId: string): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const row = await this.turns.findOneBy({ orgId, id: turnId });
    return row && toTurn(row);
  }

  async listForConversation(orgId: string, conversationId: string): Promise<Turn[]> {
    if (!isUuid(conversationId)) return [];
    const rows = await this.turns.find({ where: { orgId, conversationId }, order: { n: 'ASC' } });
    return rows.map(toTurn);
  }

  async getLatest(orgId: string, conversationId: string): Promise<Turn | null> {
    if (!isUuid(conversationId)) return null;
    const row = await this.turns.findOne({ where: { orgId, conversationId }, order: { n: 'DESC' } });
    return row && toTurn(row);
  }

  /** The conversation's queued, running or paused turn, if any (there is at most one). */
  async getActive(orgId: string, conversationId: string): Promise<Turn | null> {
    if (!isUuid(conversationId)) return null;
    const row = await this.turns.findOneBy({ orgId, conversationId, status: In(ACTIVE) });
    return row && toTurn(row);
  }

  /**
   * Sets the status (and the error, when given). With `from`, only a turn currently in one of
   * those statuses changes; null means nothing changed. Leaving `running` drops the lease.
   */
  async updateStatus(
    orgId: string,
    turnId: string,
    status: TurnStatus,
    opts: { error?: string | null; from?: TurnStatus[] } = {},
  ): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const qb = this.turns
      .createQueryBuilder()
      .update()
      .set({
        status,
        ...(opts.error !== undefined && { error: opts.error }),
        ...(status !== 'running' && { leaseOwner: null, leaseExpiresAt: null }),
      })
      .where('org_id = :orgId AND id = :turnId', { orgId, turnId });
    if (opts.from) qb.andWhere('status IN (:...from)', { from: opts.from });
    const result = await qb.execute();
    return result.affected ? this.get(orgId, turnId) : null;
  }

  /**
   * Marks a queued, running or paused turn for cancelling (the first request's time is kept).
   * Null when the turn is not the org's or has already settled.
   */
  async requestCancel(orgId: string, turnId: string): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const [rows] = await this.em.query(
      `UPDATE turns SET cancel_requested_at = COALESCE(cancel_requested_at, now()), updated_at = now()
       WHERE org_id = $1 AND id = $2 AND status = ANY($3) RETURNING id`,
      [orgId, turnId, ACTIVE],
    );
    return rows.length ? this.get(orgId, turnId) : null;
  }

  /** Each call on the turn's own model overwrites this with its input tokens. */
  async setContextTokens(orgId: string, turnId: string, contextTokens: number): Promise<void> {
    if (!isUuid(turnId)) return;
    await this.turns.update({ orgId, id: turnId }, { contextTokens });
  }

  /**
   * A worker takes the turn: a queued one, or a running one whose lease expired (its worker died)
   * or that it already holds. Sets `running`, counts the attempt. Null when another worker holds it.
   */
  async claim(orgId: string, turnId: string, owner: string, leaseMs: number): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const [rows] = await this.em.query(
      `UPDATE turns SET status = 'running', attempt = attempt + 1, lease_owner = $3,
         lease_expires_at = now() + $4 * interval '1 millisecond', updated_at = now()
       WHERE org_id = $1 AND id = $2 AND (status = 'queued' OR (status = 'running'
         AND (lease_owner = $3 OR lease_expires_at IS NULL OR lease_expires_at < now())))
       RETURNING id`,
      [orgId, turnId, owner, leaseMs],
    );
    return rows.length ? this.get(orgId, turnId) : null;
  }

  /**
   * Locks the turn row until the surrounding transaction ends (TypeORM refuses outside one), so
   * writers that also lock it (BlockRepository.appendNext) wait. With the lease and the cancel flag.
   */
  async lockForUpdate(orgId: string, turnId: string): Promise<LockedTurn | null> {
    if (!isUuid(turnId)) return null;
    const row = await this.turns
      .createQueryBuilder('t')
      .setLock('pessimistic_write')
      .where('t.orgId = :orgId AND t.id = :turnId', { orgId, turnId })
      .getOne();
    return row && { turn: toTurn(row), leaseOwner: row.leaseOwner, cancelRequested: !!row.cancelRequestedAt };
  }

  async isCancelRequested(orgId: string, turnId: string): Promise<boolean> {
    if (!isUuid(turnId)) return false;
    const rows: unknown[] = await this.em.query(
      `SELECT 1 FROM turns WHERE org_id = $1 AND id = $2 AND cancel_requested_at IS NOT NULL`,
      [orgId, turnId],
    );
    return rows.length > 0;
  }

  /** Hands a running turn back: it stays `running` with no lease, so the next claim takes it at once. */
  async releaseLease(orgId: string, turnId: string, owner: string): Promise<boolean> {
    if (!isUuid(turnId)) return false;
    const [, count] = await this.em.query(
      `UPDATE turns SET lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE org_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3`,
      [orgId, turnId, owner],
    );
    return count > 0;
  }

  /**
   * Turns nobody works on: `queued`, or `running` without a live lease, unchanged for `idleMs`.
   * Across orgs, like `UserRepository.findByApiKey`: the reconciler acts for every tenant and
   * re-reads each turn with its org id. Reads the partial index of open turns.
   */
  async listStranded(opts: { idleMs: number; limit: number }): Promise<{ orgId: string; turnId: string }[]> {
    return this.em.query(
      `SELECT org_id AS "orgId", id AS "turnId" FROM turns
       WHERE status IN ('queued', 'running', 'paused')
         AND (status = 'queued' OR (status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now())))
         AND updated_at < now() - $1 * interval '1 millisecond'
       ORDER BY updated_at LIMIT $2`,
      [opts.idleMs, opts.limit],
    );
  }

  /** Extends a held lease; false when the worker no longer holds it. */
  async renewLease(orgId: string, turnId: string, owner: string, leaseMs: number): Promise<boolean> {
    if (!isUuid(turnId)) return false;
    const [, count] = await this.em.query(
      `UPDATE turns SET lease_expires_at = now() + $4 * interval '1 millisecond'
       WHERE org_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3`,
      [orgId, turnId, owner, leaseMs],
    );
    return count > 0;
  }
}
