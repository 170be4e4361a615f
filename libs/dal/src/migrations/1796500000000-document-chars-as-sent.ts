import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A document's `chars` becomes the characters (code points) of its whole text as a model reads it,
 * pages joined by a blank line, instead of the sum of its pages' UTF-16 lengths: the inline rule
 * reads it before the text (SPEC 7, INLINE_DOC_CHARS). Postgres' char_length counts code points.
 */
export class DocumentCharsAsSent1796500000000 implements MigrationInterface {
  name = 'DocumentCharsAsSent1796500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE attachments a SET chars = w.chars
       FROM (SELECT attachment_id, char_length(string_agg(text, E'\\n\\n' ORDER BY page)) AS chars
             FROM attachment_pages GROUP BY attachment_id) w
       WHERE a.id = w.attachment_id AND a.kind = 'document' AND a.status = 'finished'`,
    );
  }

  async down(): Promise<void> {
    // The old measure (UTF-16 units, no separators) is not worth restoring: nothing reads it.
  }
}
