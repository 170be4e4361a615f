import { ensureDatabase, runMigrations } from '@portal/dal';
import { readCommonConfig } from '@portal/contracts';

/** `npm run migrate`: creates the database when missing and applies pending migrations. */
export async function migrate(env = process.env): Promise<string[]> {
  const { databaseUrl } = readCommonConfig(env);
  await ensureDatabase(databaseUrl);
  return runMigrations(databaseUrl);
}

if (require.main === module) {
  migrate().then(
    (applied) => console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date'),
    (err) => {
      console.error(`migration failed: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}
