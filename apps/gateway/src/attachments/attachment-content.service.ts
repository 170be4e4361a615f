import { Inject, Injectable } from '@nestjs/common';
import { BLOB_STORE, PictureCopies, visionLimitsFor, type BlobStore } from '@portal/application';
import { AttachmentRepository } from '@portal/dal';
import { AttachmentId, DomainError } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { ATTACHMENTS_CONFIG, type AttachmentsConfig } from './attachments.config';
import { AttachmentsService } from './attachments.service';

export interface AttachmentContent {
  mimeType: string;
  data: Buffer;
}

/**
 * `GET /v1/attachments/:id/content`: a picture as the model reads it, the copy ingest made (the
 * size the manifest names), re-encoded without EXIF or other metadata. Never the original upload,
 * which may carry its camera's metadata (a location). A document has none: its bytes are a file
 * nobody vetted (a PDF may hold scripts), so it is not served from the portal's origin; its
 * manifest is its preview.
 */
@Injectable()
export class AttachmentContentService {
  private readonly copies: PictureCopies;

  constructor(
    @Inject(ATTACHMENTS_CONFIG) private readonly config: AttachmentsConfig,
    @Inject(AttachmentsService) private readonly attachments: AttachmentsService,
    @Inject(AttachmentRepository) private readonly repository: AttachmentRepository,
    @Inject(BLOB_STORE) blobs: BlobStore,
  ) {
    this.copies = new PictureCopies(blobs);
  }

  async picture(caller: Principal, attachmentId: AttachmentId): Promise<AttachmentContent> {
    const manifest = await this.attachments.manifest(caller, attachmentId);
    if (manifest.kind !== 'picture') throw noContent(attachmentId, 'a document is shown by its manifest');
    const found = await this.repository.getForIngest(caller.orgId, manifest.id);
    if (manifest.status !== 'finished' || !manifest.picture || !found) {
      throw noContent(attachmentId, `the picture is ${manifest.status}, not read yet or unreadable`);
    }
    const limits = visionLimitsFor(this.config.catalogue, found.model);
    const copy = await this.copies.get(
      { orgId: caller.orgId, attachmentId: manifest.id },
      manifest.picture,
      limits,
    );
    if (!copy) throw noContent(attachmentId, 'the picture is no longer available');
    return { mimeType: manifest.mimeType, data: copy.data };
  }
}

function noContent(attachmentId: AttachmentId, why: string): DomainError {
  return new DomainError('not_found', `Attachment ${attachmentId} has no content to show: ${why}`);
}
