import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import {
  createDataSource,
  type DataSourceOverrides,
  dropDatabase,
  ensureDatabase,
  runMigrations,
} from '../data-source';

/**
 * dal's own copy of `createTestDatabase` from @portal/testing: that library depends on dal, so
 * dal's tests cannot import it (Nx forbids the cycle). Both are built from the same primitives.
 */
export async function createDalTestDatabase(overrides: DataSourceOverrides = {}): Promise<{
  url: string;
  dataSource: DataSource;
  drop(): Promise<void>;
}> {
  const url = new URL(process.env['DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/portal_dal_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await ensureDatabase(url.toString());
  await runMigrations(url.toString());
  const dataSource = await createDataSource(url.toString(), overrides).initialize();
  return {
    url: url.toString(),
    dataSource,
    async drop() {
      if (dataSource.isInitialized) await dataSource.destroy();
      await dropDatabase(url.toString());
    },
  };
}
