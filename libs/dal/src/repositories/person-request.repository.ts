import type { ConversationId, OrgId } from '@portal/domain';
import { personRequest, type PersonRequest } from '@portal/prompt';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';

/** A person's message of a regular turn, as it was typed, to be stored as a request. */
export interface TypedRequest {
  conversationId: ConversationId;
  turnN: number;
  messageId: string;
  /** The seq of the message's text block in its turn. */
  seq: number;
  typed: string;
  steering: boolean;
}

/** A stored request with its position, which the next page is read before. */
export type StoredRequest = PersonRequest & { seq: number; tokens: number };

/** Rows written at a time by `recordStored`. */
const STORED_BATCH = 1000;

/**
 * The person's requests (table `person_requests`), one per user message of a regular turn, written
 * with the message: the opening one by the statement that opens the turn (`TurnRepository`),
 * steering by `record`.
 */
export class PersonRequestRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** Stores the request of a message (once: a message already stored keeps its request). */
  async record(orgId: OrgId, request: TypedRequest): Promise<void> {
    await this.insert([{ ...request, orgId }]);
  }

  /**
   * Stores the requests of the person's messages that have none, from their stored text blocks:
   * for messages written without one (before `person_requests` existed, or by bulk writers that
   * write straight in SQL). Returns how many it stored.
   */
  async recordStored(opts: { conversationId?: ConversationId } = {}): Promise<number> {
    let stored = 0;
    for (;;) {
      const { rows } = await runSql<TypedRequest & { orgId: OrgId }>(
        this.em,
        `SELECT m.org_id AS "orgId", m.conversation_id AS "conversationId", t.n AS "turnN",
           m.id AS "messageId", min(b.seq)::int AS seq,
           string_agg(b.payload->>'text', E'\\n\\n' ORDER BY b.seq) AS typed,
           bool_or(COALESCE((b.payload->>'steering')::boolean, false)) AS steering
         FROM messages m
         JOIN turns t ON t.id = m.turn_id AND t.kind = 'turn'
         JOIN blocks b ON b.message_id = m.id AND b.kind = 'text'
         WHERE m.role = 'user' AND ($1::uuid IS NULL OR m.conversation_id = $1)
           AND NOT EXISTS (SELECT 1 FROM person_requests r WHERE r.message_id = m.id)
         GROUP BY m.id, t.n
         LIMIT ${STORED_BATCH}`,
        [opts.conversationId ?? null],
      );
      await this.insert(rows);
      stored += rows.length;
      if (rows.length < STORED_BATCH) return stored;
    }
  }

  /**
   * The newest `limit` requests of the conversation before `before` (a position: turn and seq),
   * oldest first, those that ask nothing included. One backward scan of `person_requests_position_idx`
   * that stops after `limit` rows, whatever the statistics: they estimate a conversation's range
   * of turns from every conversation's turn numbers, so a conversation with low ones looks short
   * and would be planned as a bitmap read of all its requests and a sort.
   */
  async readBefore(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: { before: { turnN: number; seq: number }; limit: number },
  ): Promise<StoredRequest[]> {
    if (!isUuid(conversationId)) return [];
    const { rows } = await this.em.transaction(async (em) => {
      await runSql(em, 'SET LOCAL enable_bitmapscan = off');
      return runSql<StoredRequest>(
        em,
        `SELECT turn_n AS "turnN", seq, message_id AS "messageId", text, tokens FROM person_requests
         WHERE conversation_id = $2 AND org_id = $1 AND turn_n <= $3 AND (turn_n < $3 OR seq < $4)
         ORDER BY turn_n DESC, seq DESC LIMIT $5`,
        [orgId, conversationId, opts.before.turnN, opts.before.seq, opts.limit],
      );
    });
    return rows.reverse();
  }

  private async insert(requests: readonly (TypedRequest & { orgId: OrgId })[]): Promise<void> {
    if (requests.length === 0) return;
    const made = requests.map((r) => ({ ...r, ...personRequest(r.typed, r.steering) }));
    await runSql(
      this.em,
      `INSERT INTO person_requests (message_id, org_id, conversation_id, turn_n, seq, text, tokens)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::int[], $5::int[], $6::text[], $7::int[])
       ON CONFLICT (message_id) DO NOTHING`,
      [
        made.map((r) => r.messageId),
        made.map((r) => r.orgId),
        made.map((r) => r.conversationId),
        made.map((r) => r.turnN),
        made.map((r) => r.seq),
        made.map((r) => r.text),
        made.map((r) => r.tokens),
      ],
    );
  }
}
