import { Injectable } from '@nestjs/common';
import type { ToolUseBlock } from '@portal/domain';
import { stringArg, stringsArg } from './tool-args.util';
import { error, type ToolArgs, type ToolExecutor, type ToolRun } from './tool.types';

/** `ask_clarification(question, options?)`: pauses the turn until the person answers. */
@Injectable()
export class AskClarificationTool implements ToolExecutor {
  async run(args: ToolArgs, _ctx: unknown, use: ToolUseBlock): Promise<ToolRun> {
    const question = stringArg(args, 'question');
    const options = stringsArg(args, 'options');
    if (!question) return error('ask_clarification needs a "question".');
    if (!options) return error('"options" must be a list of strings.');
    return {
      pause: { kind: 'clarification_request', callId: use.callId, question, options, answer: null },
    };
  }
}
