import { type OrgId, UserId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import { IsNull, type EntityManager } from 'typeorm';
import { hashApiKey } from '../api-key.util';
import { type Db, managerOf, runSql } from '../db.util';
import { DalError } from '../errors';
import { ApiKeyEntity } from '../entities/api-key.entity';
import { UserEntity } from '../entities/user.entity';
import { toUser } from '../mappers/records.mapper';
import type { User, UserRole } from '../records.types';

export class UserRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** A user the bootstrap file lists (listed again after a removal, they are back). */
  async upsert(orgId: OrgId, userId: UserId, role: UserRole): Promise<User> {
    await this.em
      .getRepository(UserEntity)
      .upsert({ orgId, id: userId, role, origin: 'file', removedAt: null }, ['orgId', 'id']);
    return { orgId, id: userId, role };
  }

  /** The user, unless removed from the bootstrap file. */
  async get(orgId: OrgId, userId: UserId): Promise<User | null> {
    const row = await this.em.getRepository(UserEntity).findOneBy({ orgId, id: userId, removedAt: IsNull() });
    return row && toUser(row);
  }

  /**
   * Marks the org's file users that `listed` no longer names as removed and drops their API keys;
   * users created by a sign-in are not the file's to remove. Returns the removed ids.
   */
  async removeUnlisted(orgId: OrgId, listed: readonly string[]): Promise<string[]> {
    const { rows } = await runSql<{ id: string }>(
      this.em,
      `UPDATE users SET removed_at = now()
        WHERE org_id = $1 AND origin = 'file' AND removed_at IS NULL AND NOT (id = ANY($2::text[]))
        RETURNING id`,
      [orgId, listed],
    );
    const ids = rows.map((r) => r.id);
    if (ids.length)
      await runSql(this.em, `DELETE FROM api_keys WHERE org_id = $1 AND user_id = ANY($2)`, [orgId, ids]);
    return ids;
  }

  /**
   * The user an identity provider's `sub` signs in as: created on the first sign-in with `role ??
   * defaultRole`; a known user takes `role` when the provider sent one. Null for a removed user.
   */
  async signIn(
    orgId: OrgId,
    sub: string,
    role: UserRole | null,
    defaultRole: UserRole,
  ): Promise<User | null> {
    const { rows } = await runSql<{ role: UserRole; removed: boolean }>(
      this.em,
      `INSERT INTO users (org_id, id, role, origin) VALUES ($1, $2, $3, 'oidc')
       ON CONFLICT (org_id, id) DO UPDATE SET role = COALESCE($4, users.role)
       RETURNING role, removed_at IS NOT NULL AS removed`,
      [orgId, sub, role ?? defaultRole, role],
    );
    const [row] = rows;
    return row.removed ? null : { orgId, id: UserId(sub), role: row.role };
  }

  /** Stores the key's sha256. Idempotent; a key already held by another user is an error. */
  async addApiKey(orgId: OrgId, userId: UserId, apiKey: string): Promise<void> {
    const keyHash = hashApiKey(apiKey);
    const keys = this.em.getRepository(ApiKeyEntity);
    await keys
      .createQueryBuilder()
      .insert()
      .values({ id: randomUUID(), orgId, userId, keyHash })
      .orIgnore()
      .execute();
    const owner = await keys.findOneBy({ keyHash });
    if (owner?.orgId !== orgId || owner.userId !== userId) {
      throw new DalError(
        'api_key_taken',
        `API key of ${orgId}/${userId} is already assigned to another user`,
      );
    }
  }

  /** Whether the user holds at least one API key. */
  async hasApiKey(orgId: OrgId, userId: UserId): Promise<boolean> {
    return this.em.getRepository(ApiKeyEntity).existsBy({ orgId, userId });
  }

  /**
   * The one lookup without an org id: authentication is where the org comes from. The key is
   * hashed before it reaches the database.
   */
  async findByApiKey(apiKey: string): Promise<User | null> {
    const row = await this.em
      .getRepository(UserEntity)
      .createQueryBuilder('u')
      .innerJoin(ApiKeyEntity, 'k', 'k.orgId = u.orgId AND k.userId = u.id')
      .where('k.keyHash = :keyHash', { keyHash: hashApiKey(apiKey) })
      .andWhere('u.removedAt IS NULL')
      .getOne();
    return row && toUser(row);
  }
}
