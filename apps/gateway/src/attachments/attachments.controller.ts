import { Controller, Get, HttpCode, Inject, Param, Post, Req, Res, StreamableFile } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AttachmentId, type AttachmentManifest } from '@portal/domain';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { AttachmentContentService } from './attachment-content.service';
import { AttachmentsService, type UploadedAttachment } from './attachments.service';

@Controller('v1/attachments')
export class AttachmentsController {
  constructor(
    @Inject(AttachmentsService) private readonly attachments: AttachmentsService,
    @Inject(AttachmentContentService) private readonly content: AttachmentContentService,
  ) {}

  @Post()
  @HttpCode(201)
  upload(@Caller() caller: Principal, @Req() request: FastifyRequest): Promise<UploadedAttachment> {
    return this.attachments.upload(caller, request);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<AttachmentManifest> {
    return this.attachments.manifest(caller, AttachmentId(id));
  }

  /**
   * A copy never changes under its id, and only its owner may read it: the browser keeps it, no
   * shared cache does. Set once the copy is found, so a 404 (a picture not read yet) is not kept.
   */
  @Get(':id/content')
  async picture(
    @Caller() caller: Principal,
    @Param('id') id: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StreamableFile> {
    const { mimeType, data } = await this.content.picture(caller, AttachmentId(id));
    void reply.header('cache-control', 'private, max-age=86400');
    return new StreamableFile(data, { type: mimeType, disposition: 'inline', length: data.length });
  }
}
