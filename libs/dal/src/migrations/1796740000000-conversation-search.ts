import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Full-text search over a person's conversations (GET /v1/conversations?q=): the text blocks of
 * their messages, with the `simple` configuration attachment pages use (it lowercases and keeps
 * Vietnamese tone marks; no stemming for a language it does not know). The expression is the one
 * `ConversationRepository.search` queries with, character for character, or the planner cannot use
 * the index. A block's text is indexed up to 100,000 characters, as a page's is: one tsvector holds
 * at most 1 MB. Titles need no index: they are matched among the person's own conversations only.
 */
export class ConversationSearch1796740000000 implements MigrationInterface {
  name = 'ConversationSearch1796740000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX blocks_text_search_idx ON blocks
       USING gin (to_tsvector('simple', left(payload->>'text', 100000))) WHERE kind = 'text'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX blocks_text_search_idx`);
  }
}
