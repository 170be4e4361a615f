import type { AgentId, OrgId } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { AgentSkillEntity } from '../entities/agent-skill.entity';
import type { Agent } from '../records.types';

/** An agent to store; without `mcpServers` it has none. */
export type AgentInput = Omit<Agent, 'orgId' | 'mcpServers'> & Partial<Pick<Agent, 'mcpServers'>>;

/** An `agents` row aliased `a` as an `Agent` (one JSON value), for reads joined to other tables. */
export const AGENT_JSON = `json_build_object('orgId', a.org_id, 'id', a.id, 'name', a.name,
  'instructions', a.instructions, 'model', a.model, 'effort', a.effort, 'tools', a.tools,
  'mcpServers', a.mcp_servers, 'reviewer', a.reviewer, 'compactionGuidance', a.compaction_guidance)`;

const INSERT_AGENT = `INSERT INTO agents (org_id, id, name, instructions, model, effort, tools, reviewer,
    compaction_guidance, mcp_servers)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`;

function agentParams(orgId: OrgId, agent: AgentInput): unknown[] {
  return [
    orgId,
    agent.id,
    agent.name,
    agent.instructions,
    agent.model,
    agent.effort,
    JSON.stringify(agent.tools),
    agent.reviewer,
    agent.compactionGuidance,
    JSON.stringify(agent.mcpServers ?? []),
  ];
}

export class AgentRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  async upsert(orgId: OrgId, agent: AgentInput): Promise<Agent> {
    await runSql(
      this.em,
      `${INSERT_AGENT}
       ON CONFLICT (org_id, id) DO UPDATE SET
         name = EXCLUDED.name, instructions = EXCLUDED.instructions, model = EXCLUDED.model,
         effort = EXCLUDED.effort, tools = EXCLUDED.tools, reviewer = EXCLUDED.reviewer,
         compaction_guidance = EXCLUDED.compaction_guidance, mcp_servers = EXCLUDED.mcp_servers,
         updated_at = now()`,
      agentParams(orgId, agent),
    );
    return { ...agent, mcpServers: agent.mcpServers ?? [], orgId };
  }

  /** Inserts a new agent; null when the org already has one with this id (nothing is changed). */
  async create(orgId: OrgId, agent: AgentInput): Promise<Agent | null> {
    const { rows } = await runSql(
      this.em,
      `${INSERT_AGENT}
       ON CONFLICT (org_id, id) DO NOTHING RETURNING id`,
      agentParams(orgId, agent),
    );
    return rows.length ? { ...agent, mcpServers: agent.mcpServers ?? [], orgId } : null;
  }

  async get(orgId: OrgId, agentId: AgentId): Promise<Agent | null> {
    const {
      rows: [row],
    } = await runSql<{ agent: Agent }>(
      this.em,
      `SELECT ${AGENT_JSON} AS agent FROM agents a WHERE a.org_id = $1 AND a.id = $2`,
      [orgId, agentId],
    );
    return row?.agent ?? null;
  }

  async list(orgId: OrgId): Promise<Agent[]> {
    const { rows } = await runSql<{ agent: Agent }>(
      this.em,
      `SELECT ${AGENT_JSON} AS agent FROM agents a WHERE a.org_id = $1 ORDER BY a.name, a.id`,
      [orgId],
    );
    return rows.map((r) => r.agent);
  }

  /** Replaces the agent's bound skills, keeping the given order. Ids of other orgs are ignored. */
  async setSkills(orgId: OrgId, agentId: AgentId, skillIds: string[]): Promise<void> {
    await this.em.transaction(async (em) => {
      await em.getRepository(AgentSkillEntity).delete({ orgId, agentId });
      await runSql(
        em,
        `INSERT INTO agent_skills (org_id, agent_id, skill_id, position)
         SELECT s.org_id, a.id, s.id, ids.position
         FROM unnest($3::uuid[]) WITH ORDINALITY AS ids (skill_id, position)
         JOIN skills s ON s.id = ids.skill_id AND s.org_id = $1
         JOIN agents a ON a.org_id = $1 AND a.id = $2`,
        [orgId, agentId, skillIds.filter(isUuid)],
      );
    });
  }

  async listSkillIds(orgId: OrgId, agentId: AgentId): Promise<string[]> {
    const rows = await this.em
      .getRepository(AgentSkillEntity)
      .find({ where: { orgId, agentId }, order: { position: 'ASC' } });
    return rows.map((r) => r.skillId);
  }
}
