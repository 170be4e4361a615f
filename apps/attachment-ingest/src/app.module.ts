import { Module, type DynamicModule } from '@nestjs/common';
import { BlobStoreModule } from '@portal/application';
import { DalModule } from '@portal/dal';
import { QueueModule } from '@portal/queue';
import { ConversationEvents, RedisModule } from '@portal/redis';
import { AttachmentEvents } from './attachment-events';
import { INGEST_CONFIG, type AttachmentIngestConfig } from './config';
import { DocumentIngestService } from './document-ingest.service';
import { IngestAttachmentHandler } from './ingest-attachment.handler';
import { ImageRepository } from './media/image.repository';
import { PdfRepository } from './media/pdf.repository';
import { PictureIngestService } from './picture-ingest.service';

@Module({})
export class AppModule {
  static forRoot(config: AttachmentIngestConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        // First, so that it closes last.
        RedisModule.forRoot(config.redis, { prefix: config.prefix, retentionMs: config.eventRetentionMs }),
        DalModule.forRoot(config),
        BlobStoreModule.forRoot(config),
        QueueModule.forRoot(config),
      ],
      providers: [
        { provide: INGEST_CONFIG, useValue: config },
        {
          provide: ImageRepository,
          useFactory: () => new ImageRepository({ threads: config.limits.pictureThreads }),
        },
        {
          provide: PdfRepository,
          useFactory: () => {
            const pdfs = new PdfRepository({ idleReaders: config.limits.pdfIdleReaders });
            void pdfs.prewarm(config.limits.pdfMemoryMb); // in the background
            return pdfs;
          },
        },
        {
          provide: AttachmentEvents,
          useFactory: (events: ConversationEvents) => new AttachmentEvents(events),
          inject: [ConversationEvents],
        },
        PictureIngestService,
        DocumentIngestService,
      ],
      controllers: [IngestAttachmentHandler],
    };
  }
}
