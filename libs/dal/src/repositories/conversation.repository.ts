import type { AgentId, AttachmentId, ConversationId, OrgId, TurnId, UserId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import type { Agent, Conversation } from '../records.types';
import { AGENT_JSON } from './agent.repository';

/** A `conversations` row aliased `c` as a `Conversation`. */
export const CONVERSATION_COLUMNS = `c.org_id AS "orgId", c.id, c.user_id AS "userId", c.agent_id AS "agentId",
  c.title, c.created_at AS "createdAt", c.updated_at AS "updatedAt"`;

/** The search index's expression over a text block (migration ConversationSearch1796740000000). */
export const BLOCK_TEXT_TSV = `to_tsvector('simple', left(b.payload->>'text', 100000))`;

/**
 * The words of a snippet around the match, as plain text: no markers around the matched words
 * (the default is `<b>`), so nothing in it is markup.
 */
const SNIPPET_OPTIONS = 'StartSel="", StopSel="", MinWords=12, MaxWords=30';

export interface ConversationHit extends Conversation {
  /** Words around the match in the best matching message, else in the title. */
  snippet: string;
}

export interface ConversationWithAgent {
  conversation: Conversation;
  agent: Agent;
  /** The conversation's queued, running or paused turn, if any. */
  activeTurnId: TurnId | null;
}

export class ConversationRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** Null when the agent is not one of the org's (API: 404 exactly like a missing agent). */
  async create(orgId: OrgId, userId: UserId, agentId: AgentId): Promise<Conversation | null> {
    const { rows } = await runSql<{ id: ConversationId }>(
      this.em,
      `INSERT INTO conversations (org_id, user_id, agent_id)
       SELECT a.org_id, $2, a.id FROM agents a WHERE a.org_id = $1 AND a.id = $3
       RETURNING id`,
      [orgId, userId, agentId],
    );
    return rows.length ? this.get(orgId, rows[0].id) : null;
  }

  /** For workers, which act for whoever owns the conversation. */
  async get(orgId: OrgId, conversationId: ConversationId): Promise<Conversation | null> {
    if (!isUuid(conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<Conversation>(
      this.em,
      `SELECT ${CONVERSATION_COLUMNS} FROM conversations c WHERE c.org_id = $1 AND c.id = $2`,
      [orgId, conversationId],
    );
    return row ?? null;
  }

  /** Another user's conversation reads as missing. */
  async getForUser(
    orgId: OrgId,
    userId: UserId,
    conversationId: ConversationId,
  ): Promise<Conversation | null> {
    if (!isUuid(conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<Conversation>(
      this.em,
      `SELECT ${CONVERSATION_COLUMNS} FROM conversations c
       WHERE c.org_id = $1 AND c.user_id = $2 AND c.id = $3`,
      [orgId, userId, conversationId],
    );
    return row ?? null;
  }

  /**
   * The conversation with its agent and its open turn's id, in one query. With `userId`, another
   * user's conversation reads as missing.
   */
  async getWithAgent(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: { userId?: UserId } = {},
  ): Promise<ConversationWithAgent | null> {
    if (!isUuid(conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<Conversation & { agent: Agent; activeTurnId: TurnId | null }>(
      this.em,
      `SELECT ${CONVERSATION_COLUMNS}, ${AGENT_JSON} AS agent,
         (SELECT t.id FROM turns t WHERE t.org_id = c.org_id AND t.conversation_id = c.id
            AND t.status IN ('queued', 'running', 'paused')) AS "activeTurnId"
       FROM conversations c JOIN agents a ON a.org_id = c.org_id AND a.id = c.agent_id
       WHERE c.org_id = $1 AND c.id = $2 AND ($3::text IS NULL OR c.user_id = $3)`,
      [orgId, conversationId, opts.userId ?? null],
      { prepared: true },
    );
    if (!row) return null;
    const { agent, activeTurnId, ...conversation } = row;
    return { conversation, agent, activeTurnId };
  }

  /** Most recently updated first. */
  async listForUser(orgId: OrgId, userId: UserId): Promise<Conversation[]> {
    const { rows } = await runSql<Conversation>(
      this.em,
      `SELECT ${CONVERSATION_COLUMNS} FROM conversations c WHERE c.org_id = $1 AND c.user_id = $2
       ORDER BY c.updated_at DESC, c.id`,
      [orgId, userId],
    );
    return rows;
  }

  /**
   * The user's conversations whose title or message text matches `query` (web search syntax:
   * words, "phrases", -not, or), at most `limit`: those whose title matches first, then by the rank
   * of their best matching message and the number of matching messages, then the most recently
   * updated.
   */
  async search(orgId: OrgId, userId: UserId, query: string, limit: number): Promise<ConversationHit[]> {
    const { rows } = await runSql<ConversationHit>(
      this.em,
      `WITH q AS (SELECT websearch_to_tsquery('simple', $3) AS q),
       mine AS (SELECT ${CONVERSATION_COLUMNS} FROM conversations c WHERE c.org_id = $1 AND c.user_id = $2),
       titled AS (
         SELECT m.id, ts_rank(to_tsvector('simple', coalesce(m.title, '')), q.q) AS rank
         FROM mine m, q WHERE to_tsvector('simple', coalesce(m.title, '')) @@ q.q),
       said AS (
         SELECT DISTINCT ON (b.conversation_id) b.conversation_id AS id, b.id AS "blockId",
           ts_rank(${BLOCK_TEXT_TSV}, q.q) AS rank, count(*) OVER (PARTITION BY b.conversation_id) AS hits
         FROM blocks b, q
         WHERE b.org_id = $1 AND b.kind = 'text' AND ${BLOCK_TEXT_TSV} @@ q.q
           AND b.conversation_id IN (SELECT id FROM mine)
         ORDER BY b.conversation_id, rank DESC, b.id)
       SELECT m.*, ts_headline('simple',
           coalesce((SELECT left(b.payload->>'text', 100000) FROM blocks b WHERE b.id = s."blockId"), m.title),
           q.q, '${SNIPPET_OPTIONS}') AS snippet
       FROM mine m CROSS JOIN q LEFT JOIN titled t ON t.id = m.id LEFT JOIN said s ON s.id = m.id
       WHERE t.id IS NOT NULL OR s.id IS NOT NULL
       ORDER BY t.id IS NULL, coalesce(s.rank, t.rank) DESC, s.hits DESC NULLS LAST, m."updatedAt" DESC, m.id
       LIMIT $4`,
      [orgId, userId, query, limit],
    );
    return rows;
  }

  /**
   * The summary call's name for the conversation, only while it has none: a person's rename made
   * during that call is kept.
   */
  async nameIfUntitled(orgId: OrgId, conversationId: ConversationId, title: string): Promise<void> {
    if (!isUuid(conversationId)) return;
    // A title does not make the conversation "recently updated": keep updated_at as it is.
    await runSql(
      this.em,
      `UPDATE conversations SET title = $3 WHERE org_id = $1 AND id = $2 AND title IS NULL`,
      [orgId, conversationId, title],
    );
  }

  /**
   * Deletes the user's conversation with everything it holds, in one transaction: its turns and
   * what hangs off them (messages, blocks, tool results, trace entries, usage rows, person
   * requests), and its attachments with their pages (the search index): those uploaded to it, and
   * those uploaded to no conversation that only its messages carry. Returns the deleted
   * attachments' ids, whose bytes live in the blob store (no foreign key reaches them); null when
   * the conversation is not the user's.
   */
  async deleteForUser(
    orgId: OrgId,
    userId: UserId,
    conversationId: ConversationId,
  ): Promise<AttachmentId[] | null> {
    if (!isUuid(conversationId)) return null;
    return this.em.transaction(async (em) => {
      // The row's lock waits out a turn being opened on it, so that turn goes too.
      const {
        rows: [owned],
      } = await runSql(
        em,
        `SELECT 1 FROM conversations WHERE org_id = $1 AND user_id = $2 AND id = $3 FOR UPDATE`,
        [orgId, userId, conversationId],
      );
      if (!owned) return null;
      const { rows: attachments } = await runSql<{ id: AttachmentId }>(
        em,
        `DELETE FROM attachments a WHERE a.org_id = $1 AND (
           a.conversation_id = $2
           OR (a.conversation_id IS NULL AND a.user_id = $3
             AND a.id IN (SELECT unnest(m.attachment_ids) FROM messages m
                          WHERE m.org_id = $1 AND m.conversation_id = $2)
             AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.org_id = $1
                             AND o.conversation_id <> $2 AND a.id = ANY(o.attachment_ids))))
         RETURNING a.id`,
        [orgId, conversationId, userId],
      );
      await runSql(em, `DELETE FROM conversations WHERE org_id = $1 AND id = $2`, [orgId, conversationId]);
      return attachments.map((a) => a.id);
    });
  }

  /** The owner's rename; false when the conversation is not the user's. */
  async rename(
    orgId: OrgId,
    userId: UserId,
    conversationId: ConversationId,
    title: string,
  ): Promise<boolean> {
    if (!isUuid(conversationId)) return false;
    // As for a generated title, updated_at stays: a rename does not reorder the list.
    const { rowCount } = await runSql(
      this.em,
      `UPDATE conversations SET title = $4 WHERE org_id = $1 AND user_id = $2 AND id = $3`,
      [orgId, userId, conversationId, title],
    );
    return rowCount > 0;
  }
}
