import { Inject, Injectable } from '@nestjs/common';
import type { z } from 'zod';
import { SkillRepository, type Skill } from '@portal/dal';
import { DomainError } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { canSee } from './skill-access.util';
import type { skillPatchSchema, SkillSpec } from '@portal/contracts';

export type SkillView = Omit<Skill, 'orgId'>;

const view = ({ orgId: _orgId, ...skill }: Skill): SkillView => skill;

/** Skills as the caller can see them: org-wide ones and their own private ones. */
@Injectable()
export class SkillsService {
  constructor(@Inject(SkillRepository) private readonly skills: SkillRepository) {}

  async list(caller: Principal): Promise<SkillView[]> {
    return (await this.skills.listVisible(caller.orgId, caller.userId)).map(view);
  }

  async get(caller: Principal, skillId: string): Promise<SkillView> {
    return view(await this.find(caller, skillId));
  }

  async create(caller: Principal, spec: SkillSpec): Promise<SkillView> {
    const skill = await this.skills.create(caller.orgId, { ...spec, ownerId: caller.userId });
    if (!skill) throw new DomainError('conflict', `A skill with the slug "${spec.slug}" already exists`);
    return view(skill);
  }

  async update(
    caller: Principal,
    skillId: string,
    patch: z.output<typeof skillPatchSchema>,
  ): Promise<SkillView> {
    const current = await this.find(caller, skillId);
    // A skill nobody owns becomes the caller's when made private, or nobody could see it.
    const ownerId =
      patch.visibility === 'private' && current.ownerId === null ? caller.userId : current.ownerId;
    const updated = await this.skills.update(caller.orgId, skillId, { ...patch, ownerId });
    return view(updated ?? current);
  }

  private async find(caller: Principal, skillId: string): Promise<Skill> {
    const skill = await this.skills.get(caller.orgId, skillId);
    if (!skill || !canSee(skill, caller.userId))
      throw new DomainError('not_found', `Skill ${skillId} not found`);
    return skill;
  }
}
