import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The person's messages of a turn and their text blocks, each found by one index probe: the
 * compaction worker reads them for up to the requests share's worth of turns (SPEC 5.2), so a
 * first compaction of a long conversation makes thousands of these probes.
 */
export class PersonTextIndexes1767398400000 implements MigrationInterface {
  name = 'PersonTextIndexes1767398400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX messages_person_idx ON messages (turn_id, seq) WHERE role = 'user'`,
    );
    await queryRunner.query(`CREATE INDEX blocks_text_idx ON blocks (message_id, seq) WHERE kind = 'text'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX blocks_text_idx`);
    await queryRunner.query(`DROP INDEX messages_person_idx`);
  }
}
