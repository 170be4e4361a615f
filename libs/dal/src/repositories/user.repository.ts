import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { hashApiKey } from '../api-key.util';
import { type Db, managerOf } from '../db.util';
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

  async upsert(orgId: string, userId: string, role: UserRole): Promise<User> {
    await this.em.getRepository(UserEntity).upsert({ orgId, id: userId, role }, ['orgId', 'id']);
    return { orgId, id: userId, role };
  }

  async get(orgId: string, userId: string): Promise<User | null> {
    const row = await this.em.getRepository(UserEntity).findOneBy({ orgId, id: userId });
    return row && toUser(row);
  }

  /** Stores the key's sha256. Idempotent; a key already held by another user is an error. */
  async addApiKey(orgId: string, userId: string, apiKey: string): Promise<void> {
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
  async hasApiKey(orgId: string, userId: string): Promise<boolean> {
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
      .getOne();
    return row && toUser(row);
  }
}
