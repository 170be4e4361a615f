import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { ConversationEntity } from '../entities/conversation.entity';
import { toConversation } from '../mappers/records.mapper';
import type { Conversation } from '../records.types';

export class ConversationRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  private get conversations() {
    return this.em.getRepository(ConversationEntity);
  }

  /** Null when the agent is not one of the org's (API: 404 exactly like a missing agent). */
  async create(orgId: string, userId: string, agentId: string): Promise<Conversation | null> {
    const rows: { id: string }[] = await this.em.query(
      `INSERT INTO conversations (org_id, user_id, agent_id)
       SELECT a.org_id, $2, a.id FROM agents a WHERE a.org_id = $1 AND a.id = $3
       RETURNING id`,
      [orgId, userId, agentId],
    );
    return rows.length ? this.get(orgId, rows[0].id) : null;
  }

  /** For workers, which act for whoever owns the conversation. */
  async get(orgId: string, conversationId: string): Promise<Conversation | null> {
    if (!isUuid(conversationId)) return null;
    const row = await this.conversations.findOneBy({ orgId, id: conversationId });
    return row && toConversation(row);
  }

  /** Another user's conversation reads as missing. */
  async getForUser(orgId: string, userId: string, conversationId: string): Promise<Conversation | null> {
    if (!isUuid(conversationId)) return null;
    const row = await this.conversations.findOneBy({ orgId, userId, id: conversationId });
    return row && toConversation(row);
  }

  /** Most recently updated first. */
  async listForUser(orgId: string, userId: string): Promise<Conversation[]> {
    const rows = await this.conversations.find({
      where: { orgId, userId },
      order: { updatedAt: 'DESC', id: 'ASC' },
    });
    return rows.map(toConversation);
  }

  async setTitle(orgId: string, conversationId: string, title: string): Promise<void> {
    if (!isUuid(conversationId)) return;
    // A title does not make the conversation "recently updated": keep updated_at as it is.
    await this.em.query(`UPDATE conversations SET title = $3 WHERE org_id = $1 AND id = $2`, [
      orgId,
      conversationId,
      title,
    ]);
  }
}
