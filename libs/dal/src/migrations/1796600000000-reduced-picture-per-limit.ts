import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A picture's reduced copies are kept one per size limit, as `reduced-<long>x<short>` (SPEC 7: a
 * picture is reduced for the model that reads it). The single `reduced` copy of before was made
 * for limits it does not record: it is dropped, and made again from the original when read.
 */
export class ReducedPicturePerLimit1796600000000 implements MigrationInterface {
  name = 'ReducedPicturePerLimit1796600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE attachment_blobs DROP CONSTRAINT IF EXISTS attachment_blobs_variant_check`,
    );
    await queryRunner.query(`DELETE FROM attachment_blobs WHERE variant = 'reduced'`);
    await queryRunner.query(
      `ALTER TABLE attachment_blobs ADD CONSTRAINT attachment_blobs_variant_check
       CHECK (variant = 'original' OR variant ~ '^reduced-[1-9][0-9]*x[1-9][0-9]*$')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE attachment_blobs DROP CONSTRAINT IF EXISTS attachment_blobs_variant_check`,
    );
    await queryRunner.query(`DELETE FROM attachment_blobs WHERE variant <> 'original'`);
    await queryRunner.query(
      `ALTER TABLE attachment_blobs ADD CONSTRAINT attachment_blobs_variant_check
       CHECK (variant IN ('original', 'reduced'))`,
    );
  }
}
