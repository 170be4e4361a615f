import { Inject, Injectable } from '@nestjs/common';
import {
  AttachmentToolsService,
  type ReadDocumentArgs,
  type SearchAttachmentsArgs,
} from '@portal/application';
import { AttachmentRepository } from '@portal/dal';
import type { ToolArgs, ToolContext, ToolExecutor, ToolRun } from './tool.types';

/** `read_document` and `search_attachments`, scoped to the calling turn's conversation. */
@Injectable()
export class AttachmentTools {
  readonly readDocument: ToolExecutor;
  readonly searchAttachments: ToolExecutor;

  constructor(@Inject(AttachmentRepository) attachments: AttachmentRepository) {
    const service = new AttachmentToolsService(attachments);
    const scope = (ctx: ToolContext) => ({ orgId: ctx.orgId, conversationId: ctx.turn.conversationId });
    this.readDocument = {
      run: (args: ToolArgs, ctx: ToolContext): Promise<ToolRun> =>
        // The service checks every argument itself.
        service.readDocument(scope(ctx), args as unknown as ReadDocumentArgs),
    };
    this.searchAttachments = {
      run: (args: ToolArgs, ctx: ToolContext): Promise<ToolRun> =>
        service.searchAttachments(scope(ctx), args as unknown as SearchAttachmentsArgs),
    };
  }
}
