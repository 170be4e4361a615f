import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';
import type { UserRole } from '../records.types';

/** Users keep the id of the bootstrap file (`alice`), unique within their org. */
@Entity('users')
export class UserEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  role!: UserRole;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
