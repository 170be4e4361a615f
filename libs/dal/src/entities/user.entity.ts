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

  /** `file`: listed by the bootstrap file; `oidc`: created by a first sign-in through the org's provider. */
  @Column({ type: 'text', default: 'file' })
  origin!: 'file' | 'oidc';

  /** Set once the bootstrap file no longer lists a `file` user: they sign in no more. */
  @Column({ name: 'removed_at', type: 'timestamptz', nullable: true })
  removedAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
