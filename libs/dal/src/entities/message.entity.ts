import type { Role } from '@portal/domain';
import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

@Entity('messages')
export class MessageEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId!: string;

  @Column({ name: 'turn_id', type: 'uuid' })
  turnId!: string;

  /** Position of the message within its turn. */
  @Column({ type: 'integer' })
  seq!: number;

  @Column({ type: 'text' })
  role!: Role;

  @Column({ name: 'attachment_ids', type: 'uuid', array: true })
  attachmentIds!: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
