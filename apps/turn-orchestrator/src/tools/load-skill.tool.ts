import { Inject, Injectable } from '@nestjs/common';
import { SkillRepository } from '@portal/dal';
import { stringArg } from './tool-args.util';
import { error, ok, type ToolArgs, type ToolContext, type ToolExecutor, type ToolRun } from './tool.types';

/**
 * `load_skill(slug)`: only what the model was offered, the turn's catalogue snapshot and its
 * selected skills. A draft or unbound skill the person could select by `/slug` is refused: the
 * model must not reach it by guessing its slug.
 */
@Injectable()
export class LoadSkillTool implements ToolExecutor {
  constructor(@Inject(SkillRepository) private readonly skills: SkillRepository) {}

  async run(args: ToolArgs, ctx: ToolContext): Promise<ToolRun> {
    const slug = stringArg(args, 'slug')?.trim().replace(/^\//, '');
    if (!slug) return error('load_skill needs a "slug".');
    const [skill] = await this.skills.findBySlugs(ctx.orgId, [slug]);
    const { catalogueSkillIds, selectedSkillIds } = ctx.turn;
    const offered = skill && (catalogueSkillIds.includes(skill.id) || selectedSkillIds.includes(skill.id));
    if (!offered)
      return error(`No skill "${slug}" is available to load: only the skills listed can be loaded.`);
    return ok(`# ${skill.name} (/${skill.slug})\n\n${skill.instructions.trim()}`);
  }
}
