import { AgentId } from '@portal/domain';
import { Body, Controller, Get, Inject, Param, Patch, Post } from '@nestjs/common';
import { AuthorsOnly, Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { ZodBody } from '../common/validation.pipe';
import { agentPatchSchema, agentSchema, type AgentPatch, type AgentSpec } from '@portal/contracts';
import { AgentsService, type AgentView } from './agents.service';

@Controller('v1/agents')
export class AgentsController {
  constructor(@Inject(AgentsService) private readonly agents: AgentsService) {}

  @Get()
  list(@Caller() caller: Principal): Promise<AgentView[]> {
    return this.agents.list(caller);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<AgentView> {
    return this.agents.get(caller, AgentId(id));
  }

  @AuthorsOnly()
  @Post()
  create(@Caller() caller: Principal, @Body(new ZodBody(agentSchema)) body: AgentSpec): Promise<AgentView> {
    return this.agents.create(caller, body);
  }

  @AuthorsOnly()
  @Patch(':id')
  update(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Body(new ZodBody(agentPatchSchema)) body: AgentPatch,
  ): Promise<AgentView> {
    return this.agents.update(caller, AgentId(id), body);
  }
}
