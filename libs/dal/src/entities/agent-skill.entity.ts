import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A skill bound to an agent; `position` keeps the order the skills were bound in. */
@Entity('agent_skills')
export class AgentSkillEntity {
  @PrimaryColumn({ name: 'org_id', type: 'text' })
  orgId!: string;

  @PrimaryColumn({ name: 'agent_id', type: 'text' })
  agentId!: string;

  @PrimaryColumn({ name: 'skill_id', type: 'uuid' })
  skillId!: string;

  @Column({ type: 'integer' })
  position!: number;
}
