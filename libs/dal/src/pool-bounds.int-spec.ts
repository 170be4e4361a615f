import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { createScratchDatabase, createServiceDataSource, type ScratchDatabase } from './data-source';
import { runSql } from './db.util';

/** Each bound of the services' pool, small enough for a test to outlast. */
const BOUND_MS = 300;

describe("the services' Postgres pool bounds", () => {
  let db: ScratchDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createScratchDatabase({ label: 'bounds' });
    await runSql(db.dataSource, `INSERT INTO orgs (id, name) VALUES ('acme', 'Acme')`);
    // One connection: the statement after a failure shows whether that connection goes on.
    ds = await createServiceDataSource(db.url, 1, {
      connectMs: BOUND_MS,
      statementMs: BOUND_MS,
      idleInTransactionMs: BOUND_MS,
    }).initialize();
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('cancels a statement that outlasts its bound, and the connection goes on', async () => {
    await expect(runSql(ds, 'SELECT pg_sleep(2)')).rejects.toMatchObject({ code: '57014' });
    await expect(runSql(ds, 'SELECT 1 AS one', [], { prepared: true })).resolves.toMatchObject({
      rows: [{ one: 1 }],
    });
  });

  it('ends a transaction left idle, and its row locks with it', async () => {
    const other = new Client({ connectionString: db.url });
    await other.connect();
    try {
      const holding = ds.transaction(async (em) => {
        await runSql(em, `SELECT 1 FROM orgs WHERE id = 'acme' FOR UPDATE`);
        await sleep(BOUND_MS * 4);
        await runSql(em, 'SELECT 1');
      });
      holding.catch(() => undefined);
      await sleep(BOUND_MS * 2);
      // While the holder still sleeps, the server has ended its session: the lock is free.
      await expect(
        other.query(`SELECT 1 FROM orgs WHERE id = 'acme' FOR UPDATE NOWAIT`),
      ).resolves.toMatchObject({
        rowCount: 1,
      });
      await expect(holding).rejects.toThrow();
      await expect(runSql(ds, 'SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      await other.end();
    }
  });

  it('fails a wait for a connection that outlasts its bound', async () => {
    // Holds the pool's one connection for about twice the bound, never idle for as long as one.
    let held!: () => void;
    const holds = new Promise<void>((resolve) => (held = resolve));
    const holding = ds.transaction(async (em) => {
      for (let i = 0; i < 6; i++) {
        await runSql(em, 'SELECT 1');
        held();
        await sleep(BOUND_MS / 3);
      }
    });
    await holds;
    await expect(runSql(ds, 'SELECT 1')).rejects.toThrow(/timeout exceeded when trying to connect/);
    await holding;
    await expect(runSql(ds, 'SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
  });
});
