import { createHash } from 'node:crypto';
import type { PoolClient } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';

/** Repositories take either the data source or a transaction's manager, so they compose. */
export type Db = DataSource | EntityManager;

export function managerOf(db: Db): EntityManager {
  return db instanceof DataSource ? db.manager : db;
}

/** What a statement returned: its rows (RETURNING's, for a write) and the rows it touched. */
export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `portal_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * The one way repositories run SQL: on the transaction's QueryRunner when `db` is a transaction's
 * manager, else on a QueryRunner taken from the pool for this statement and released after.
 * `prepared` runs it as a named statement (pg's `{ name, text, values }` query on the connection
 * QueryRunner.connect() returns), parsed and planned once per connection: for the hot paths'
 * statements with a fixed text whose plan cannot depend on the values (docs/benchmarks.md).
 * Errors are TypeORM's QueryFailedError, or pg's own for a prepared statement (see `isPgError`).
 */
export async function runSql<T>(
  db: Db,
  text: string,
  values: unknown[] = [],
  opts: { prepared?: boolean } = {},
): Promise<SqlResult<T>> {
  const em = managerOf(db);
  const runner = em.queryRunner ?? em.connection.createQueryRunner();
  try {
    if (!opts.prepared) {
      const result = await runner.query(text, values, true);
      return { rows: result.records ?? [], rowCount: result.affected ?? 0 };
    }
    const client = (await runner.connect()) as PoolClient;
    em.connection.logger.logQuery(text, values, runner);
    const result = await client.query({ name: statementName(text), text, values });
    return { rows: result.rows as T[], rowCount: result.rowCount ?? 0 };
  } finally {
    if (runner !== em.queryRunner) await runner.release();
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive from URLs; a malformed one must read as "not found", not as a Postgres error. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** True when err is (or wraps) a Postgres error with this SQLSTATE. */
export function isPgError(err: unknown, code: string, constraint?: string): boolean {
  const e = err as {
    code?: string;
    constraint?: string;
    driverError?: { code?: string; constraint?: string };
  };
  const pg = e?.driverError ?? e;
  return pg?.code === code && (constraint === undefined || pg.constraint === constraint);
}
