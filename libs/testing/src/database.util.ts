import { createScratchDatabase, type ScratchDatabase } from '@portal/dal';

export type TestDatabase = ScratchDatabase;

/**
 * A fresh, uniquely named database on the local Postgres (server from DATABASE_URL, or
 * `serverUrl`) with every migration applied.
 */
export function createTestDatabase(serverUrl?: string): Promise<TestDatabase> {
  return createScratchDatabase({ label: 'test', serverUrl: serverUrl ?? process.env['DATABASE_URL'] });
}
