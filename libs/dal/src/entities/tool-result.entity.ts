import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** The whole output of one tool call, fetched by `read_tool_result(ref)`. */
@Entity('tool_results')
export class ToolResultEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  /** `tr_<16 hex>`, unique across orgs. */
  @Column({ type: 'text' })
  ref!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId!: string;

  @Column({ name: 'turn_id', type: 'uuid' })
  turnId!: string;

  @Column({ name: 'call_id', type: 'text' })
  callId!: string;

  @Column({ type: 'text' })
  content!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}
