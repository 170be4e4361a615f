import type { BlockKind } from '@portal/domain';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('blocks')
export class BlockEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId!: string;

  @Column({ name: 'turn_id', type: 'uuid' })
  turnId!: string;

  /** Copy of the turn's n (never changes), so the newest compaction is one index lookup. */
  @Column({ name: 'turn_n', type: 'integer' })
  turnN!: number;

  @Column({ name: 'message_id', type: 'uuid' })
  messageId!: string;

  /** Position within the turn, across all its messages. */
  @Column({ type: 'integer' })
  seq!: number;

  @Column({ type: 'text' })
  kind!: BlockKind;

  /** The kind-specific fields of the domain block (everything but id, seq and kind). */
  @Column({ type: 'jsonb' })
  payload!: Record<string, unknown>;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
