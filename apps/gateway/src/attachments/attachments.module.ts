import { Module, type DynamicModule } from '@nestjs/common';
import { ATTACHMENTS_CONFIG, type AttachmentsConfig } from './attachments.config';
import { AttachmentContentService } from './attachment-content.service';
import { AttachmentsController } from './attachments.controller';
import { AttachmentsService } from './attachments.service';

/**
 * `POST /v1/attachments`, `GET /v1/attachments/:id` and its content. Needs the DalModule,
 * BlobStoreModule and QueueModule (global), the gateway's AuthGuard (APP_GUARD) and ApiErrorFilter
 * (APP_FILTER), and @fastify/multipart registered on the Fastify instance (createGatewayApp does).
 */
@Module({})
export class AttachmentsModule {
  static forRoot(config: AttachmentsConfig): DynamicModule {
    return {
      module: AttachmentsModule,
      controllers: [AttachmentsController],
      providers: [
        { provide: ATTACHMENTS_CONFIG, useValue: config },
        AttachmentsService,
        AttachmentContentService,
      ],
    };
  }
}
