import type { OrgId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, managerOf } from '../db.util';
import { OrgEntity } from '../entities/org.entity';
import { toOrg } from '../mappers/records.mapper';
import type { Org } from '../records.types';

export class OrgRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  async upsert(orgId: OrgId, name: string = orgId): Promise<Org> {
    await this.em.getRepository(OrgEntity).upsert({ id: orgId, name }, ['id']);
    return { id: orgId, name };
  }

  async get(orgId: OrgId): Promise<Org | null> {
    const row = await this.em.getRepository(OrgEntity).findOneBy({ id: orgId });
    return row && toOrg(row);
  }
}
