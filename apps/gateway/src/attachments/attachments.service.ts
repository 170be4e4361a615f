import { createHash, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { lastValueFrom } from 'rxjs';
import { QueueName } from '@portal/contracts';
import {
  BLOB_STORE,
  detectAttachmentType,
  type BlobKey,
  type BlobStore,
  UploadHandOff,
} from '@portal/application';
import { AttachmentRepository } from '@portal/dal';
import { AttachmentId, type AttachmentManifest, ConversationId, DomainError } from '@portal/domain';
import { cutText } from '@portal/prompt';
import { BullMqClient, JobRecord } from '@portal/queue';
import type { Principal } from '../common/principal.types';
import { ATTACHMENTS_CONFIG, type AttachmentsConfig } from './attachments.config';

/** The answer to an upload (API.md). */
export type UploadedAttachment = Pick<AttachmentManifest, 'id' | 'kind' | 'filename' | 'mimeType' | 'status'>;

interface Upload {
  filename: string;
  bytes: Buffer;
  /** Hex SHA-256 of the bytes, hashed as they arrived. */
  sha256: string;
}

@Injectable()
export class AttachmentsService {
  constructor(
    @Inject(AttachmentRepository) private readonly attachments: AttachmentRepository,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(BullMqClient) private readonly queues: BullMqClient,
    @Inject(UploadHandOff) private readonly handoff: UploadHandOff,
    @Inject(ATTACHMENTS_CONFIG) private readonly config: AttachmentsConfig,
  ) {}

  /**
   * Streams the multipart upload (field `file`, optional `conversationId`) with the size cap,
   * decides its kind once from its bytes, stores it `pending` and enqueues its ingest.
   */
  async upload(caller: Principal, request: FastifyRequest): Promise<UploadedAttachment> {
    if (typeof request.isMultipart !== 'function' || !request.isMultipart()) {
      throw new DomainError(
        'validation_failed',
        'Send multipart/form-data with the file in the field `file`',
      );
    }
    const { upload, conversationId } = await this.readParts(request);
    if (!upload) throw new DomainError('validation_failed', 'file: the multipart field `file` is missing');
    const type = detectAttachmentType(upload.bytes);
    if (!type.ok) throw new DomainError('unsupported_type', type.reason);

    const original: BlobKey = {
      orgId: caller.orgId,
      attachmentId: AttachmentId(randomUUID()),
      variant: 'original',
    };
    const handingOff = this.handoff.put(original, upload.bytes, this.config.handoffTtlMs);
    let created: AttachmentManifest | null = null;
    try {
      created = await this.attachments.create(caller.orgId, {
        id: original.attachmentId,
        userId: caller.userId,
        conversationId,
        kind: type.kind,
        filename: upload.filename,
        mimeType: type.mimeType,
        byteSize: upload.bytes.length,
        sha256: upload.sha256,
      });
    } finally {
      if (!created) await handingOff.then(() => this.handoff.drop(original));
    }
    if (!created) throw new DomainError('not_found', `Conversation ${conversationId} not found`);
    // The durable copy comes before the 201 either way. Handed off, it is written after the job
    // is queued, while the worker already reads the hand-off; else before, so a worker never
    // finds a row without its bytes.
    const handedOff = await handingOff;
    if (!handedOff) await this.blobs.put(original, upload.bytes);
    await lastValueFrom(
      this.queues.emit(
        QueueName.Attachments,
        new JobRecord(
          { orgId: caller.orgId, attachmentId: original.attachmentId },
          { jobId: `ingest-attachment:${created.id}:upload` },
        ),
      ),
    );
    // A failure here answers 500, as any lost answer would; the worker may still read the file
    // from the hand-off, and the caller, who never learnt its id, uploads it again.
    if (handedOff) await this.blobs.put(original, upload.bytes);
    const { id, kind, filename, mimeType, status } = created;
    return { id, kind, filename, mimeType, status };
  }

  /** The caller's own attachment; another user's or org's answers 404 exactly as a missing one. */
  async manifest(caller: Principal, attachmentId: AttachmentId): Promise<AttachmentManifest> {
    const [scope] = await this.attachments.getScopes(caller.orgId, [attachmentId]);
    const manifest =
      scope?.userId === caller.userId && (await this.attachments.getManifest(caller.orgId, attachmentId));
    if (!manifest) throw new DomainError('not_found', `Attachment ${attachmentId} not found`);
    return manifest;
  }

  private async readParts(
    request: FastifyRequest,
  ): Promise<{ upload: Upload | null; conversationId: ConversationId | null }> {
    let upload: Upload | null = null;
    let conversationId: ConversationId | null = null;
    try {
      const parts = request.parts({
        limits: { fileSize: this.config.maxBytes, files: 1, fields: 4, fieldSize: 256 },
      });
      for await (const part of parts) {
        if (part.type === 'file') {
          const { bytes, sha256 } = await this.readCapped(part.file);
          if (part.fieldname === 'file') upload = { filename: cleanFilename(part.filename), bytes, sha256 };
        } else if (
          part.fieldname === 'conversationId' &&
          typeof part.value === 'string' &&
          part.value !== ''
        ) {
          conversationId = ConversationId(part.value);
        }
      }
    } catch (err) {
      throw multipartError(err, this.config.maxBytes);
    }
    return { upload, conversationId };
  }

  /**
   * Collects the stream, refusing it once it passes the cap, and hashes each chunk as it comes in
   * (while the next one is still on its way) rather than the whole file at the end.
   */
  private async readCapped(
    stream: Readable & { truncated?: boolean },
  ): Promise<{ bytes: Buffer; sha256: string }> {
    const chunks: Buffer[] = [];
    const hash = createHash('sha256');
    for await (const chunk of stream) {
      chunks.push(chunk as Buffer);
      hash.update(chunk as Buffer);
    }
    if (stream.truncated) throw new DomainError('too_large', tooLarge(this.config.maxBytes));
    return { bytes: chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), sha256: hash.digest('hex') };
  }
}

function tooLarge(maxBytes: number): string {
  return `The file is larger than the limit of ${maxBytes} bytes`;
}

function multipartError(err: unknown, maxBytes: number): unknown {
  const code = (err as { code?: string })?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return new DomainError('too_large', tooLarge(maxBytes));
  if (code === 'FST_FILES_LIMIT')
    return new DomainError('validation_failed', 'file: send one file per upload');
  if (code === 'FST_FIELDS_LIMIT' || code === 'FST_PARTS_LIMIT') {
    return new DomainError(
      'validation_failed',
      'Too many multipart fields: send `file` and `conversationId` only',
    );
  }
  if (err instanceof DomainError) return err;
  // Anything else the parser throws (busboy: "Unexpected end of form", "Boundary not found", …)
  // is the body's fault, not the server's.
  return new DomainError(
    'validation_failed',
    `The multipart body is malformed${code ? '' : `: ${(err as Error)?.message ?? String(err)}`}`,
  );
}

/** The name as the client sent it, without a path or control characters, at most 255 characters. */
function cleanFilename(name: string | undefined): string {
  const base = (name ?? '').split(/[\\/]/).pop() ?? '';
  const printable = [...base].filter((c) => c >= ' ' && c !== '\u007f').join('');
  const clean = cutText(printable, 255).trim();
  return clean || 'upload';
}
