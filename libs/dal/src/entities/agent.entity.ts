import type { Effort } from '@portal/domain';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { AgentMcpServer, AgentTool } from '../records.types';

@Entity('agents')
export class AgentEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ type: 'text' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  instructions!: string;

  @Column({ type: 'text' })
  model!: string;

  @Column({ type: 'text' })
  effort!: Effort;

  @Column({ type: 'jsonb' })
  tools!: AgentTool[];

  @Column({ name: 'mcp_servers', type: 'jsonb' })
  mcpServers!: AgentMcpServer[];

  @Column({ type: 'text', nullable: true })
  reviewer!: string | null;

  @Column({ name: 'compaction_guidance', type: 'text', nullable: true })
  compactionGuidance!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
