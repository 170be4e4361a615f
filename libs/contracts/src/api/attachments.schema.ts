import { z } from 'zod';

export const attachmentUploadSchema = z.object({
  id: z.string(),
  kind: z.enum(['document', 'picture']),
  filename: z.string(),
  mimeType: z.string(),
  status: z.enum(['pending', 'reading', 'finished', 'failed']),
});
export type AttachmentUpload = z.output<typeof attachmentUploadSchema>;

/** The manifest of `GET /v1/attachments/:id`, and of `attachment_progress` events. */
export const attachmentManifestSchema = attachmentUploadSchema.extend({
  pagesRead: z.number().int(),
  pageCount: z.number().int().nullable(),
  unreadablePages: z.array(z.number().int()).describe('page numbers from 1'),
  headings: z.array(z.string()).describe('the first 20: PDF outline first, else the text'),
  chars: z.number().int().nullable(),
  picture: z
    .object({
      width: z.number().int(),
      height: z.number().int(),
      originalWidth: z.number().int(),
      originalHeight: z.number().int(),
    })
    .nullable()
    .describe('reduced size, and original size, both after EXIF orientation'),
  error: z.string().nullable().describe('why it failed'),
});
export type AttachmentManifest = z.output<typeof attachmentManifestSchema>;

/** `POST /v1/attachments`: a multipart form. */
export const attachmentFormSchema = z.object({
  file: z.string().meta({ format: 'binary' }),
  conversationId: z.string().optional().describe("one of the caller's conversations"),
});
