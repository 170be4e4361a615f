import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How many steering messages a turn has taken. Steering bumps it on the turn row in the
 * transaction that adds the message, so a worker that settles the turn in one statement without
 * reading it under lock first can require the count it read with the transcript: a row lock
 * re-checks a concurrently updated row's columns, never the rows of other tables.
 */
export class TurnSteeringCount1796800000000 implements MigrationInterface {
  name = 'TurnSteeringCount1796800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turns ADD COLUMN steering_count integer NOT NULL DEFAULT 0`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turns DROP COLUMN steering_count`);
  }
}
