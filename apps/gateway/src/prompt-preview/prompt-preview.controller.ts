import { ConversationId } from '@portal/domain';
import { Controller, Get, Inject, Param } from '@nestjs/common';
import { AuthorsOnly, Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { PromptPreviewService, type PromptPreview } from './prompt-preview.service';

@Controller('v1/conversations')
export class PromptPreviewController {
  constructor(@Inject(PromptPreviewService) private readonly previews: PromptPreviewService) {}

  @AuthorsOnly()
  @Get(':id/prompt-preview')
  preview(@Caller() caller: Principal, @Param('id') id: string): Promise<PromptPreview> {
    return this.previews.preview(caller, ConversationId(id));
  }
}
