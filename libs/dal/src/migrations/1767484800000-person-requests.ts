import type { MigrationInterface, QueryRunner } from 'typeorm';
import { PersonRequestRepository } from '../repositories/person-request.repository';

/**
 * The person's requests stored with their messages (`person_requests`): a first compaction of a
 * long conversation reads up to the requests share's worth of them (SPEC 5.2) with one range scan
 * of their position, with their tokens counted when they were written. The messages written
 * before get theirs from their stored text. The two indexes that served the per-turn probes this
 * replaces go.
 */
export class PersonRequests1767484800000 implements MigrationInterface {
  name = 'PersonRequests1767484800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE person_requests (
        message_id uuid PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
        org_id text NOT NULL,
        conversation_id uuid NOT NULL,
        turn_n integer NOT NULL,
        seq integer NOT NULL,
        text text NOT NULL,
        tokens integer NOT NULL CHECK (tokens >= 0)
      )`);
    await queryRunner.query(
      `CREATE INDEX person_requests_position_idx ON person_requests (conversation_id, turn_n, seq)`,
    );
    await new PersonRequestRepository(queryRunner.manager).recordStored();
    await queryRunner.query(`DROP INDEX messages_person_idx`);
    await queryRunner.query(`DROP INDEX blocks_text_idx`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX messages_person_idx ON messages (turn_id, seq) WHERE role = 'user'`,
    );
    await queryRunner.query(`CREATE INDEX blocks_text_idx ON blocks (message_id, seq) WHERE kind = 'text'`);
    await queryRunner.query(`DROP TABLE person_requests`);
  }
}
