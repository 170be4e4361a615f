import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A blob is written through the BlobStore before its attachment row exists (a crash between the
 * two leaves an orphan blob, never a row without its bytes), so it cannot reference the row.
 */
export class BlobsWithoutAttachmentFk1767312000000 implements MigrationInterface {
  name = 'BlobsWithoutAttachmentFk1767312000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE attachment_blobs DROP CONSTRAINT IF EXISTS attachment_blobs_attachment_id_fkey`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // Orphans (blobs whose row never came) would refuse the constraint.
    await queryRunner.query(
      `DELETE FROM attachment_blobs b WHERE NOT EXISTS (SELECT 1 FROM attachments a WHERE a.id = b.attachment_id)`,
    );
    await queryRunner.query(
      `ALTER TABLE attachment_blobs ADD CONSTRAINT attachment_blobs_attachment_id_fkey
       FOREIGN KEY (attachment_id) REFERENCES attachments (id) ON DELETE CASCADE`,
    );
  }
}
