import { AttachmentId, type AttachmentManifest } from '@portal/domain';
import type { AttachmentEntity } from '../entities/attachment.entity';

export function toAttachmentManifest(e: AttachmentEntity): AttachmentManifest {
  return {
    id: AttachmentId(e.id),
    kind: e.kind,
    filename: e.filename,
    mimeType: e.mimeType,
    status: e.status,
    pagesRead: e.pagesRead,
    pageCount: e.pageCount,
    unreadablePages: e.unreadablePages,
    headings: e.headings,
    chars: e.chars,
    picture: e.picture,
    error: e.error,
  };
}
