import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DATABASE_POOL_WAIT_MS } from '@portal/contracts';
import { DataSource } from 'typeorm';
import type { PostgresDataSourceOptions } from 'typeorm/driver/postgres/PostgresDataSourceOptions';
import { ENTITIES } from './entities';
import { isPgError, quoteIdent, runSql } from './db.util';
import { MIGRATIONS } from './migrations';

/** Any two processes that migrate the same database take turns on this advisory lock. */
const MIGRATION_LOCK_KEY = 7_263_001;

export type DataSourceOverrides = Omit<Partial<PostgresDataSourceOptions>, 'type' | 'url'>;

export function createDataSource(databaseUrl: string, overrides: DataSourceOverrides = {}): DataSource {
  return new DataSource({
    type: 'postgres',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    ...overrides,
  });
}

/**
 * How long the services' Postgres work may wait, so a wait that would never end fails and its job
 * is tried again: a statement (the server cancels it, SQLSTATE 57014, and the connection goes on),
 * a transaction left idle (the server ends its session and its row locks with it), and getting a
 * connection, new or from a full pool. Migrations are not bounded: an index build may take minutes.
 */
export interface PoolBounds {
  connectMs: number;
  statementMs: number;
  idleInTransactionMs: number;
}

/** Far above any statement of the services (a 4 MB blob's write takes under 100 ms). */
export const SERVICE_POOL_BOUNDS: PoolBounds = {
  connectMs: DATABASE_POOL_WAIT_MS,
  statementMs: 30_000,
  idleInTransactionMs: 60_000,
};

/** The services' data source: at most `poolSize` connections, their waits bounded by `bounds`. */
export function createServiceDataSource(
  databaseUrl: string,
  poolSize: number,
  bounds: PoolBounds = SERVICE_POOL_BOUNDS,
): DataSource {
  return createDataSource(databaseUrl, {
    extra: {
      max: poolSize,
      connectionTimeoutMillis: bounds.connectMs,
      statement_timeout: bounds.statementMs,
      idle_in_transaction_session_timeout: bounds.idleInTransactionMs,
    },
  });
}

/** Applies pending migrations; returns the names of the ones applied. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const lock = new Client({ connectionString: databaseUrl });
  await lock.connect();
  const dataSource = createDataSource(databaseUrl);
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await dataSource.initialize();
    const applied = await dataSource.runMigrations({ transaction: 'all' });
    return applied.map((m) => m.name);
  } finally {
    if (dataSource.isInitialized) await dataSource.destroy();
    await lock.end();
  }
}

/** Creates the database named by the URL when it does not exist (connecting to `postgres` first). */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const { name, client } = await connectToPostgresDb(databaseUrl);
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return;
    await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
  } catch (err) {
    // Another process created it between the check and CREATE.
    if (!isPgError(err, '42P04') && !isPgError(err, '23505')) throw err;
  } finally {
    await client.end();
  }
}

/** Drops the database named by the URL, closing any connection still open to it. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const { name, client } = await connectToPostgresDb(databaseUrl);
  try {
    // FORCE terminates the open connections first (Postgres 13+).
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** The database name of the URL, and a client connected to the `postgres` database beside it. */
async function connectToPostgresDb(databaseUrl: string): Promise<{ name: string; client: Client }> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!name) throw new Error(`database URL names no database: ${databaseUrl}`);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  return { name, client };
}

/** Readiness: the database answers a trivial query. */
export function isDatabaseReady(dataSource: DataSource): Promise<boolean> {
  return runSql(dataSource, 'SELECT 1').then(
    () => true,
    () => false,
  );
}

export interface ScratchDatabase {
  url: string;
  dataSource: DataSource;
  /** Closes the data source, then drops the database (terminating any connection left). */
  drop(): Promise<void>;
}

/**
 * A fresh, uniquely named database on `serverUrl`'s server (the local one by default) with every
 * migration applied, for tests and benchmarks; dropped again if the migrations fail.
 */
export async function createScratchDatabase(
  options: { label?: string; overrides?: DataSourceOverrides; serverUrl?: string } = {},
): Promise<ScratchDatabase> {
  const url = new URL(options.serverUrl ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  url.pathname = `/portal_${options.label ?? 'test'}_${process.pid}_${randomBytes(4).toString('hex')}`;
  const databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  try {
    await runMigrations(databaseUrl);
    const dataSource = await createDataSource(databaseUrl, options.overrides).initialize();
    return {
      url: databaseUrl,
      dataSource,
      async drop() {
        if (dataSource.isInitialized) await dataSource.destroy();
        await dropDatabase(databaseUrl);
      },
    };
  } catch (err) {
    await dropDatabase(databaseUrl);
    throw err;
  }
}
