import { Body, Controller, Get, Inject, Param, Patch, Post } from '@nestjs/common';
import type { z } from 'zod';
import { AuthorsOnly, Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { ZodBody } from '../common/validation.pipe';
import { skillPatchSchema, skillSchema, type SkillSpec } from '@portal/contracts';
import { SkillsService, type SkillView } from './skills.service';

@Controller('v1/skills')
export class SkillsController {
  constructor(@Inject(SkillsService) private readonly skills: SkillsService) {}

  @Get()
  list(@Caller() caller: Principal): Promise<SkillView[]> {
    return this.skills.list(caller);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<SkillView> {
    return this.skills.get(caller, id);
  }

  @AuthorsOnly()
  @Post()
  create(@Caller() caller: Principal, @Body(new ZodBody(skillSchema)) body: SkillSpec): Promise<SkillView> {
    return this.skills.create(caller, body);
  }

  @AuthorsOnly()
  @Patch(':id')
  update(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Body(new ZodBody(skillPatchSchema)) body: z.output<typeof skillPatchSchema>,
  ): Promise<SkillView> {
    return this.skills.update(caller, id, body);
  }
}
