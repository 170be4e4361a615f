import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The SKILL_SELECT trace entry becomes the one record of a turn's selected skills (SPEC 6): a
 * resume reads it, and `turns.selected_skill_ids`, a second copy that could disagree, goes. The
 * entry exists only for a turn that selected skills, so the empty ones written before go too.
 */
export class SkillSelectTraceOnly1767571200000 implements MigrationInterface {
  name = 'SkillSelectTraceOnly1767571200000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      INSERT INTO trace_entries (org_id, turn_id, kind, skill_ids)
      SELECT org_id, id, 'SKILL_SELECT', selected_skill_ids FROM turns
      WHERE cardinality(selected_skill_ids) > 0
      ON CONFLICT (turn_id) WHERE kind = 'SKILL_SELECT' DO NOTHING`);
    await queryRunner.query(
      `DELETE FROM trace_entries WHERE kind = 'SKILL_SELECT' AND cardinality(skill_ids) = 0`,
    );
    await queryRunner.query(`ALTER TABLE turns DROP COLUMN selected_skill_ids`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turns ADD COLUMN selected_skill_ids uuid[] NOT NULL DEFAULT '{}'`);
    await queryRunner.query(`
      UPDATE turns t SET selected_skill_ids = te.skill_ids FROM trace_entries te
      WHERE te.turn_id = t.id AND te.kind = 'SKILL_SELECT'`);
  }
}
