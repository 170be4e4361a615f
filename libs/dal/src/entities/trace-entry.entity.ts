import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { TraceKind } from '../records.types';

@Entity('trace_entries')
export class TraceEntryEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'turn_id', type: 'uuid' })
  turnId!: string;

  @Column({ type: 'text' })
  kind!: TraceKind;

  @Column({ name: 'skill_ids', type: 'uuid', array: true })
  skillIds!: string[];

  @Column({ type: 'timestamptz' })
  at!: Date;
}
