import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { SkillStatus, SkillVisibility } from '../records.types';

@Entity('skills')
export class SkillEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  slug!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  description!: string;

  @Column({ type: 'text' })
  instructions!: string;

  @Column({ type: 'text' })
  visibility!: SkillVisibility;

  @Column({ name: 'owner_id', type: 'text', nullable: true })
  ownerId!: string | null;

  @Column({ type: 'text' })
  status!: SkillStatus;

  @Column({ type: 'boolean' })
  published!: boolean;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
