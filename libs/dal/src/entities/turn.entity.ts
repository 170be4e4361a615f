import type { Effort, TurnKind, TurnStatus } from '@portal/domain';
import type { McpToolSnapshot } from '../records.types';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('turns')
export class TurnEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'conversation_id', type: 'uuid' })
  conversationId!: string;

  @Column({ type: 'integer' })
  n!: number;

  @Column({ type: 'text' })
  kind!: TurnKind;

  @Column({ type: 'text' })
  status!: TurnStatus;

  @Column({ type: 'text' })
  effort!: Effort;

  @Column({ type: 'text' })
  model!: string;

  @Column({ name: 'context_tokens', type: 'integer', nullable: true })
  contextTokens!: number | null;

  @Column({ name: 'catalogue_skill_ids', type: 'uuid', array: true })
  catalogueSkillIds!: string[];

  /** The MCP tools the turn offers, listed when it started; null until then. */
  @Column({ name: 'mcp_tools', type: 'jsonb', nullable: true })
  mcpTools!: McpToolSnapshot | null;

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  /** How many times a worker has claimed the turn. */
  @Column({ type: 'integer' })
  attempt!: number;

  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner!: string | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt!: Date | null;

  /** Steering messages taken; a settle without the turn's lock requires the count it read. */
  @Column({ name: 'steering_count', type: 'integer', default: 0 })
  steeringCount!: number;

  /** Set by the gateway's cancel; the worker running the turn cuts it off. */
  @Column({ name: 'cancel_requested_at', type: 'timestamptz', nullable: true })
  cancelRequestedAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
