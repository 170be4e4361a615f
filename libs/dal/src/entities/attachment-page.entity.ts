import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The text of one page. The table also has `tsv`, a stored generated tsvector (`simple`
 * configuration, GIN index) that only the search query reads, so it is not mapped here.
 */
@Entity('attachment_pages')
export class AttachmentPageEntity {
  @PrimaryColumn({ name: 'attachment_id', type: 'uuid' })
  attachmentId!: string;

  /** Counted from 1. */
  @PrimaryColumn({ type: 'integer' })
  page!: number;

  @Column({ name: 'org_id', type: 'text' })
  orgId!: string;

  @Column({ type: 'text' })
  text!: string;
}
