import { Controller, Get, HttpCode, Inject, Param, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { AttachmentManifest } from '@portal/domain';
import { Caller } from '../common/auth.decorator';
import type { Principal } from '../common/principal.types';
import { AttachmentsService, type UploadedAttachment } from './attachments.service';

@Controller('v1/attachments')
export class AttachmentsController {
  constructor(@Inject(AttachmentsService) private readonly attachments: AttachmentsService) {}

  @Post()
  @HttpCode(201)
  upload(@Caller() caller: Principal, @Req() request: FastifyRequest): Promise<UploadedAttachment> {
    return this.attachments.upload(caller, request);
  }

  @Get(':id')
  get(@Caller() caller: Principal, @Param('id') id: string): Promise<AttachmentManifest> {
    return this.attachments.manifest(caller, id);
  }
}
