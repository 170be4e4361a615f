import { randomBytes } from 'node:crypto';
import { createDataSource, dropDatabase, ensureDatabase, runMigrations } from '@portal/dal';
import type { DataSource } from 'typeorm';

export interface TestDatabase {
  url: string;
  dataSource: DataSource;
  /** Closes the data source, then drops the database (terminating any connection left). */
  drop(): Promise<void>;
}

const DEFAULT_BASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A fresh, uniquely named database on the local Postgres (server from DATABASE_URL) with every
 * migration applied.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const url = new URL(process.env['DATABASE_URL'] ?? DEFAULT_BASE_URL);
  url.pathname = `/portal_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(url.toString());
  await runMigrations(url.toString());
  const dataSource = await createDataSource(url.toString()).initialize();
  return {
    url: url.toString(),
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await dropDatabase(url.toString());
    },
  };
}
