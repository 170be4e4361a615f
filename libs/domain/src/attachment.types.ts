import type { AttachmentId } from './ids';

export type AttachmentKind = 'document' | 'picture';
export type AttachmentStatus = 'pending' | 'reading' | 'finished' | 'failed';

/** The manifest of API.md `GET /v1/attachments/:id`. */
export interface AttachmentManifest {
  id: AttachmentId;
  kind: AttachmentKind;
  filename: string;
  mimeType: string;
  status: AttachmentStatus;
  pagesRead: number;
  pageCount: number | null;
  /** Page numbers counted from 1. */
  unreadablePages: number[];
  headings: string[];
  chars: number | null;
  picture: { width: number; height: number; originalWidth: number; originalHeight: number } | null;
  error: string | null;
}
