import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where a user came from (`file`: the bootstrap file; `oidc`: a first sign-in through the org's
 * identity provider) and when the bootstrap file stopped listing them (`removed_at`): a removed
 * user keeps their conversations but no longer signs in, by key or by session.
 */
export class UserOrigin1796400000000 implements MigrationInterface {
  name = 'UserOrigin1796400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE users
        ADD COLUMN origin text NOT NULL DEFAULT 'file' CHECK (origin IN ('file', 'oidc')),
        ADD COLUMN removed_at timestamptz`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE users DROP COLUMN removed_at, DROP COLUMN origin`);
  }
}
