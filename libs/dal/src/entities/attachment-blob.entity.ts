import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { BlobVariant } from '../records.types';

/** PostgresBlobStore's table (the default BlobStore): bytes in Postgres, so every pod sees them. */
@Entity('attachment_blobs')
export class AttachmentBlobEntity {
  @PrimaryColumn({ name: 'attachment_id', type: 'uuid' })
  attachmentId!: string;

  @PrimaryColumn({ type: 'text' })
  variant!: BlobVariant;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'bytea' })
  data!: Buffer;
}
