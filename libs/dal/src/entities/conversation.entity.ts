import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('conversations')
export class ConversationEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ name: 'agent_id', type: 'text' })
  agentId!: string;

  @Column({ type: 'text', nullable: true })
  title!: string | null;

  /** The n of the newest turn; bumped atomically to number the next one. */
  @Column({ name: 'last_turn_n', type: 'integer' })
  lastTurnN!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
