import { Controller, Inject, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { QueueName, type JobData } from '@portal/contracts';
import { BLOB_STORE, type BlobStore, UploadHandOff } from '@portal/application';
import { AttachmentRepository, type ManifestPatch } from '@portal/dal';
import { addLogContext, inSpan, PortalMetrics, SPAN } from '@portal/observability';
import { BullMqContext, JOB_OPTIONS } from '@portal/queue';
import { AttachmentEvents } from './attachment-events';
import { DocumentIngestService } from './document-ingest.service';
import type { IngestContext } from './ingest.types';
import { UnreadableFileError } from './media/media.errors';
import { PictureIngestService } from './picture-ingest.service';

/**
 * `ingest-attachment`: `pending → reading → finished | failed(reason)`. Idempotent: a finished or
 * failed attachment is left as it is; one left `reading` by a worker that died is read again from
 * its first page, replacing what was stored. A file that cannot be read fails at once with its
 * reason; any other error is retried, and marks the attachment failed on the last attempt.
 */
@Controller()
export class IngestAttachmentHandler {
  private readonly logger = new Logger('IngestAttachmentHandler');

  constructor(
    @Inject(AttachmentRepository) private readonly attachments: AttachmentRepository,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(PictureIngestService) private readonly pictures: PictureIngestService,
    @Inject(DocumentIngestService) private readonly documents: DocumentIngestService,
    @Inject(AttachmentEvents) private readonly events: AttachmentEvents,
    @Inject(PortalMetrics) private readonly metrics: PortalMetrics,
    @Inject(UploadHandOff) private readonly handoff: UploadHandOff,
  ) {}

  @EventPattern(QueueName.Attachments)
  async handle(@Payload() data: JobData<'ingest-attachment'>, @Ctx() context: BullMqContext): Promise<void> {
    const { orgId, attachmentId } = data;
    const signal = context.getSignal();
    const key = { orgId, attachmentId, variant: 'original' } as const;
    // The gateway's hand-off (asked for with the row) while it lasts, since the blob store may not
    // have the bytes yet; else the blob store, only for an attachment still to be read.
    const handedOff = this.handoff.take(key);
    const found = await this.attachments.getForIngest(orgId, attachmentId);
    if (!found || found.manifest.status === 'finished' || found.manifest.status === 'failed') return;
    const original = handedOff.then((bytes) => bytes ?? this.blobs.get(key));
    original.catch(() => undefined); // awaited by the service that reads it
    const { manifest: attachment, conversationId, model } = found;
    addLogContext({ conversationId: conversationId ?? undefined });
    const progress = async (patch: ManifestPatch, publish = true) => {
      const manifest = await this.attachments.update(orgId, attachmentId, patch);
      if (!manifest) throw new Error(`attachment ${attachmentId} is gone`);
      if (publish) await this.events.progress(conversationId, manifest);
      return manifest;
    };
    // The reading starts with it rather than after it; every later write waits for it to settle,
    // so the status never goes back to `reading`.
    const reading = progress({ status: 'reading', error: null }).catch(() => undefined);
    const ctx: IngestContext = {
      orgId,
      attachment,
      conversationId,
      model,
      signal,
      original,
      report: async (patch: ManifestPatch, publish = true) => {
        await reading;
        return progress(patch, publish);
      },
      publish: async (manifest) => {
        await reading;
        await this.events.progress(conversationId, manifest);
      },
    };
    const kind = { kind: attachment.kind };
    const timer = this.metrics.ingestDuration.startTimer(kind);
    // Finished or failed for good: the gateway's hand-off is no longer needed.
    let ended = false;
    try {
      await inSpan(
        SPAN.ingest,
        { 'portal.attachment.kind': attachment.kind, 'portal.attachment_id': attachmentId },
        () => (attachment.kind === 'picture' ? this.pictures.read(ctx) : this.documents.read(ctx)),
      );
      timer();
      ended = true;
    } catch (err) {
      if (err instanceof UnreadableFileError) {
        this.metrics.ingestFailures.inc(kind);
        await ctx.report({ status: 'failed', error: err.message });
        ended = true;
        return;
      }
      const attempts = JOB_OPTIONS[QueueName.Attachments].attempts ?? 1;
      if (!signal.aborted && context.getJob().attemptsMade + 1 >= attempts) {
        this.logger.error(`attachment ${attachmentId}: ${(err as Error).stack ?? String(err)}`);
        this.metrics.ingestFailures.inc(kind);
        await ctx.report({ status: 'failed', error: `internal error: ${(err as Error).message}` });
        ended = true;
      }
      throw err;
    } finally {
      // A read that fails at once would otherwise leave the job before its `reading` write lands.
      await reading;
      if (ended) await this.handoff.drop(key);
    }
  }
}
