import { createDataSource, ensureDatabase, runMigrations } from './data-source';
import { ENTITIES } from './entities';
import { createScratchDatabase, type ScratchDatabase } from './data-source';

const TABLES = [
  'agent_skills',
  'agents',
  'api_keys',
  'attachment_blobs',
  'attachment_pages',
  'attachments',
  'blocks',
  'conversations',
  'messages',
  'orgs',
  'skills',
  'tool_results',
  'trace_entries',
  'turns',
  'usage_rows',
  'users',
];

describe('migrations', () => {
  let db: ScratchDatabase;

  beforeAll(async () => {
    db = await createScratchDatabase({ label: 'dal_test' });
  });
  afterAll(async () => {
    await db.drop();
  });

  async function tables(): Promise<string[]> {
    const rows: { table_name: string }[] = await db.dataSource.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`,
    );
    return rows.map((r) => r.table_name).filter((t) => t !== 'migrations');
  }

  it('apply from an empty database', async () => {
    expect(await tables()).toEqual(TABLES);
  });

  it('run once: a second run and a second ensureDatabase change nothing', async () => {
    await ensureDatabase(db.url);
    expect(await runMigrations(db.url)).toEqual([]);
  });

  it('create every column the entities map, with the same nullability', async () => {
    const rows: { table_name: string; column_name: string; is_nullable: string }[] =
      await db.dataSource.query(
        `SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = 'public'`,
      );
    const columns = new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.is_nullable === 'YES']));
    for (const entity of ENTITIES) {
      const meta = db.dataSource.getMetadata(entity);
      for (const column of meta.columns) {
        expect({
          column: `${meta.tableName}.${column.databaseName}`,
          nullable: columns.get(`${meta.tableName}.${column.databaseName}`),
        }).toEqual({
          column: `${meta.tableName}.${column.databaseName}`,
          nullable: column.isNullable,
        });
      }
    }
  });

  it('revert cleanly down to empty and apply again', async () => {
    const ds = await createDataSource(db.url).initialize();
    try {
      while ((await ds.query(`SELECT count(*)::int AS n FROM migrations`))[0].n > 0)
        await ds.undoLastMigration();
      expect(await tables()).toEqual([]);
    } finally {
      await ds.destroy();
    }
    expect(await runMigrations(db.url)).toEqual([
      'InitialSchema1767225600000',
      'BlobsWithoutAttachmentFk1767312000000',
      'PersonTextIndexes1767398400000',
    ]);
    expect(await tables()).toEqual(TABLES);
  });
});
