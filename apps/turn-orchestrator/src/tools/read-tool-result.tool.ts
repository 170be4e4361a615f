import { Inject, Injectable } from '@nestjs/common';
import { ToolResultRepository } from '@portal/dal';
import { toolResultRef } from '@portal/prompt';
import { stringArg } from './tool-args.util';
import { error, ok, type ToolArgs, type ToolContext, type ToolExecutor, type ToolRun } from './tool.types';

/** `read_tool_result(ref)`: a stored result of this conversation, whole. */
@Injectable()
export class ReadToolResultTool implements ToolExecutor {
  constructor(@Inject(ToolResultRepository) private readonly results: ToolResultRepository) {}

  async run(args: ToolArgs, ctx: ToolContext): Promise<ToolRun> {
    const raw = stringArg(args, 'ref');
    if (!raw) return error('read_tool_result needs a "ref".');
    const ref = toolResultRef(raw);
    const result = await this.results.get(ctx.orgId, ref);
    if (!result || result.conversationId !== ctx.turn.conversationId) {
      return error(`No tool result ref:${ref} in this conversation.`);
    }
    return ok(result.content);
  }
}
