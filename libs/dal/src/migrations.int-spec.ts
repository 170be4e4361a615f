import type { DataSource } from 'typeorm';
import { createDataSource, ensureDatabase, runMigrations } from './data-source';
import { personRequest } from '@portal/prompt';
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
  'person_requests',
  'skills',
  'tool_results',
  'trace_entries',
  'turns',
  'usage_rows',
  'users',
];

/** Every migration in the order it applies. */
const APPLIED = [
  'InitialSchema1767225600000',
  'BlobsWithoutAttachmentFk1767312000000',
  'PersonTextIndexes1767398400000',
  'PersonRequests1767484800000',
  'SkillSelectTraceOnly1767571200000',
  'McpServers1796311824000',
  'UserOrigin1796400000000',
  'DocumentCharsAsSent1796500000000',
  'ReducedPicturePerLimit1796600000000',
  'ConversationSearch1796740000000',
  'TurnSteeringCount1796800000000',
];
const appliedFrom = (name: string) => APPLIED.slice(APPLIED.indexOf(name));

/** Back to the schema before the migration `name`: it and every later one undone, newest first. */
async function undoThrough(ds: DataSource, name: string): Promise<void> {
  for (;;) {
    const [last] = await ds.query(`SELECT name FROM migrations ORDER BY id DESC LIMIT 1`);
    await ds.undoLastMigration();
    if (last.name === name) return;
  }
}

describe('migrations', () => {
  let db: ScratchDatabase;

  beforeAll(async () => {
    db = await createScratchDatabase({ label: 'dal_test', serverUrl: process.env['DATABASE_URL'] });
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
    expect(await runMigrations(db.url)).toEqual(APPLIED);
    expect(await tables()).toEqual(TABLES);
  });

  it("store the requests of the person's messages written before `person_requests`", async () => {
    const ds = await createDataSource(db.url).initialize();
    try {
      await undoThrough(ds, 'PersonRequests1767484800000');
      await ds.query(`INSERT INTO orgs (id, name) VALUES ('acme', 'Acme')`);
      await ds.query(`INSERT INTO users (org_id, id, role) VALUES ('acme', 'alice', 'author')`);
      await ds.query(
        `INSERT INTO agents (org_id, id, name, instructions, model, effort) VALUES ('acme', 'a', 'A', 'I.', 'm', 'low')`,
      );
      const [{ id: conversationId }] = await ds.query(
        `INSERT INTO conversations (org_id, user_id, agent_id, last_turn_n) VALUES ('acme', 'alice', 'a', 2) RETURNING id`,
      );
      // Turn 1 regular: an opening message with a skill and a steering one; turn 2 a `/compact`.
      await ds.query(
        `WITH t AS (
           INSERT INTO turns (org_id, conversation_id, n, kind, status, effort, model)
           VALUES ('acme', $1, 1, 'turn', 'completed', 'low', 'm'), ('acme', $1, 2, 'compaction', 'completed', 'low', 'm')
           RETURNING id, n, kind),
         m AS (
           INSERT INTO messages (org_id, conversation_id, turn_id, seq, role)
           SELECT 'acme', $1, t.id, s, 'user' FROM t, generate_series(1, 2) s WHERE s = 1 OR t.kind = 'turn'
           RETURNING id, turn_id, seq)
         INSERT INTO blocks (org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
         SELECT 'acme', $1, t.id, t.n, m.id, m.seq, 'text', jsonb_build_object(
           'text', CASE WHEN t.kind = 'compaction' THEN '/compact' WHEN m.seq = 1 THEN '/report Tóm tắt quý 3' ELSE '/x as typed' END,
           'narration', false, 'steering', m.seq = 2)
         FROM m JOIN t ON t.id = m.turn_id`,
        [conversationId],
      );
    } finally {
      await ds.destroy();
    }
    expect(await runMigrations(db.url)).toEqual(appliedFrom('PersonRequests1767484800000'));
    const rows = await db.dataSource.query(
      `SELECT org_id, turn_n, seq, text, tokens FROM person_requests ORDER BY turn_n, seq`,
    );
    expect(rows).toEqual([
      {
        org_id: 'acme',
        turn_n: 1,
        seq: 1,
        text: 'Tóm tắt quý 3',
        tokens: personRequest('Tóm tắt quý 3', false).tokens,
      },
      {
        org_id: 'acme',
        turn_n: 1,
        seq: 2,
        text: '/x as typed',
        tokens: personRequest('/x as typed', true).tokens,
      },
    ]);
  });
  it('move the selected skills of turns written before into their SKILL_SELECT entries, dropping empty ones', async () => {
    const ds = await createDataSource(db.url).initialize();
    let selecting: string;
    let plain: string;
    const skill = '00000000-0000-4000-8000-000000000001';
    try {
      await undoThrough(ds, 'SkillSelectTraceOnly1767571200000');
      const [{ id: conversationId }] = await ds.query(
        `SELECT id FROM conversations WHERE org_id = 'acme' LIMIT 1`,
      );
      await ds.query(`UPDATE conversations SET last_turn_n = 4 WHERE id = $1`, [conversationId]);
      [{ id: selecting }, { id: plain }] = await ds.query(
        `INSERT INTO turns (org_id, conversation_id, n, kind, status, effort, model, selected_skill_ids)
         VALUES ('acme', $1, 3, 'turn', 'completed', 'low', 'm', $2), ('acme', $1, 4, 'turn', 'completed', 'low', 'm', '{}')
         RETURNING id`,
        [conversationId, [skill]],
      );
      await ds.query(
        `INSERT INTO trace_entries (org_id, turn_id, kind, skill_ids) VALUES ('acme', $1, 'SKILL_SELECT', '{}')`,
        [plain],
      );
    } finally {
      await ds.destroy();
    }
    expect(await runMigrations(db.url)).toEqual(appliedFrom('SkillSelectTraceOnly1767571200000'));
    const rows = await db.dataSource.query(
      `SELECT turn_id, skill_ids FROM trace_entries WHERE turn_id = ANY($1)`,
      [[selecting, plain]],
    );
    expect(rows).toEqual([{ turn_id: selecting, skill_ids: [skill] }]);
  });
});
