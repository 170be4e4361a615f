import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An agent's MCP servers (`agents.mcp_servers`), and the MCP tools a turn offers
 * (`turns.mcp_tools`), listed when the turn starts and kept so a resumed turn offers the same
 * ones. Null until listed.
 */
export class McpServers1796311824000 implements MigrationInterface {
  name = 'McpServers1796311824000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE agents ADD COLUMN mcp_servers jsonb NOT NULL DEFAULT '[]'`);
    await queryRunner.query(`ALTER TABLE turns ADD COLUMN mcp_tools jsonb`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE turns DROP COLUMN mcp_tools`);
    await queryRunner.query(`ALTER TABLE agents DROP COLUMN mcp_servers`);
  }
}
