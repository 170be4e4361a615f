import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AgentRepository, SkillRepository, type Agent } from '@portal/dal';
import { AgentId, DomainError } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { canSee } from '../skills/skill-access.util';
import { agentProblems } from './agent-rules.util';
import type { AgentPatch, AgentSpec } from '@portal/contracts';

export type AgentView = Omit<Agent, 'orgId'> & { skills: string[] };

@Injectable()
export class AgentsService {
  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(AgentRepository) private readonly agents: AgentRepository,
    @Inject(SkillRepository) private readonly skills: SkillRepository,
  ) {}

  async list(caller: Principal): Promise<AgentView[]> {
    const agents = await this.agents.list(caller.orgId);
    return Promise.all(agents.map((agent) => this.view(agent)));
  }

  async get(caller: Principal, agentId: AgentId): Promise<AgentView> {
    return this.view(await this.find(caller, agentId));
  }

  async create(caller: Principal, spec: AgentSpec): Promise<AgentView> {
    this.check(spec, ['model', 'reviewer', 'tools', 'mcpServers']);
    const skillIds = await this.resolveSkills(caller, spec.skills);
    const { skills: _slugs, ...agent } = spec;
    await this.dataSource.transaction(async (em) => {
      const agents = new AgentRepository(em);
      if (!(await agents.create(caller.orgId, { ...agent, id: AgentId(agent.id) }))) {
        throw new DomainError('conflict', `Agent "${spec.id}" already exists`);
      }
      await agents.setSkills(caller.orgId, AgentId(spec.id), skillIds);
    });
    return this.get(caller, AgentId(spec.id));
  }

  async update(caller: Principal, agentId: AgentId, patch: AgentPatch): Promise<AgentView> {
    const current = await this.find(caller, agentId);
    const { skills: slugs, ...fields } = patch;
    const next = { ...current, ...fields };
    // Only what the patch touches is checked: an agent whose model left the catalogue can still be renamed.
    this.check(next, Object.keys(fields));
    const skillIds = slugs && (await this.resolveSkills(caller, slugs));
    await this.dataSource.transaction(async (em) => {
      const agents = new AgentRepository(em);
      const { orgId: _orgId, ...input } = next;
      await agents.upsert(caller.orgId, input);
      if (skillIds) await agents.setSkills(caller.orgId, agentId, skillIds);
    });
    return this.get(caller, agentId);
  }

  private async find(caller: Principal, agentId: AgentId): Promise<Agent> {
    const agent = await this.agents.get(caller.orgId, agentId);
    if (!agent) throw new DomainError('not_found', `Agent ${agentId} not found`);
    return agent;
  }

  private check(agent: Pick<Agent, 'model' | 'reviewer' | 'tools' | 'mcpServers'>, fields: string[]): void {
    const problem = agentProblems(agent, this.config).find((p) => fields.includes(p.field.split(/[.[]/)[0]));
    if (problem) throw new DomainError('validation_failed', `${problem.field}: ${problem.message}`);
  }

  /** Slugs to skill ids, in order; a slug the caller cannot see reads as missing. */
  private async resolveSkills(caller: Principal, slugs: string[]): Promise<string[]> {
    const found = await this.skills.findBySlugs(caller.orgId, slugs);
    return slugs.map((slug, i) => {
      const skill = found.find((s) => s.slug === slug && canSee(s, caller.userId));
      if (!skill) throw new DomainError('validation_failed', `skills[${i}]: no skill "${slug}" in this org`);
      return skill.id;
    });
  }

  private async view(agent: Agent): Promise<AgentView> {
    const ids = await this.agents.listSkillIds(agent.orgId, agent.id);
    const bound = await this.skills.getMany(agent.orgId, ids);
    const { orgId: _orgId, ...rest } = agent;
    return { ...rest, skills: ids.flatMap((id) => bound.find((s) => s.id === id)?.slug ?? []) };
  }
}
