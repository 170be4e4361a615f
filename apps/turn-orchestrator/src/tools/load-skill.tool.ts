import { Inject, Injectable } from '@nestjs/common';
import { SkillRepository } from '@portal/dal';
import { isSelectable } from '@portal/prompt';
import { stringArg } from './tool-args.util';
import { error, ok, type ToolArgs, type ToolContext, type ToolExecutor, type ToolRun } from './tool.types';

/** `load_skill(slug)`: a skill of the turn's catalogue snapshot, or one the user could select. */
@Injectable()
export class LoadSkillTool implements ToolExecutor {
  constructor(@Inject(SkillRepository) private readonly skills: SkillRepository) {}

  async run(args: ToolArgs, ctx: ToolContext): Promise<ToolRun> {
    const slug = stringArg(args, 'slug')?.trim().replace(/^\//, '');
    if (!slug) return error('load_skill needs a "slug".');
    const [skill] = await this.skills.findBySlugs(ctx.orgId, [slug]);
    const allowed =
      skill &&
      (ctx.turn.catalogueSkillIds.includes(skill.id) ||
        isSelectable({ ...skill, ownerId: skill.ownerId ?? '' }, ctx.userId));
    if (!allowed) return error(`No skill "${slug}" is available to load.`);
    return ok(`# ${skill.name} (/${skill.slug})\n\n${skill.instructions.trim()}`);
  }
}
