import type { AttachmentKind, AttachmentManifest, AttachmentStatus } from '@portal/domain';
import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

@Entity('attachments')
export class AttachmentEntity {
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ name: 'user_id', type: 'text' })
  userId!: string;

  @Column({ name: 'conversation_id', type: 'uuid', nullable: true })
  conversationId!: string | null;

  @Column({ type: 'text' })
  kind!: AttachmentKind;

  @Column({ type: 'text' })
  filename!: string;

  @Column({ name: 'mime_type', type: 'text' })
  mimeType!: string;

  @Column({ type: 'text' })
  status!: AttachmentStatus;

  @Column({ name: 'pages_read', type: 'integer' })
  pagesRead!: number;

  @Column({ name: 'page_count', type: 'integer', nullable: true })
  pageCount!: number | null;

  @Column({ name: 'unreadable_pages', type: 'integer', array: true })
  unreadablePages!: number[];

  @Column({ type: 'text', array: true })
  headings!: string[];

  @Column({ type: 'integer', nullable: true })
  chars!: number | null;

  @Column({ type: 'jsonb', nullable: true })
  picture!: AttachmentManifest['picture'];

  @Column({ type: 'text', nullable: true })
  error!: string | null;

  @Column({ name: 'byte_size', type: 'integer' })
  byteSize!: number;

  @Column({ type: 'text' })
  sha256!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
