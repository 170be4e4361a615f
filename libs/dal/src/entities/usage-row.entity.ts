import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { UsageKind } from '../records.types';

@Entity('usage_rows')
export class UsageRowEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'turn_id', type: 'uuid' })
  turnId!: string;

  @Column({ type: 'text' })
  kind!: UsageKind;

  @Column({ type: 'text' })
  model!: string;

  @Column({ name: 'input_tokens', type: 'integer' })
  inputTokens!: number;

  @Column({ name: 'output_tokens', type: 'integer' })
  outputTokens!: number;

  @Column({ name: 'cached_tokens', type: 'integer' })
  cachedTokens!: number;

  /** numeric: pg returns it as a string; the mapper turns it into a number. */
  @Column({ type: 'numeric' })
  cost!: string;

  /** Optional idempotency key of the model call (unique per turn), so a retried job records once. */
  @Column({ name: 'call_key', type: 'text', nullable: true })
  callKey!: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
