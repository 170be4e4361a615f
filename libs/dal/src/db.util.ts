import { createHash } from 'node:crypto';
import { DataSource, type EntityManager } from 'typeorm';

/** Repositories take either the data source or a transaction's manager, so they compose. */
export type Db = DataSource | EntityManager;

export function managerOf(db: Db): EntityManager {
  return db instanceof DataSource ? db.manager : db;
}

interface PgQueryable {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

const statementNames = new Map<string, string>();

/**
 * Runs a statement of a hot path as a named prepared statement: each connection parses and plans
 * it once rather than on every call. For statements whose plan cannot depend on the values (keyed
 * lookups and writes); inside a transaction it runs on the transaction's connection. Returns the
 * rows (RETURNING's, for a write); errors are pg's own (see `isPgError`).
 */
export async function queryPrepared<T>(em: EntityManager, text: string, values: unknown[]): Promise<T[]> {
  let name = statementNames.get(text);
  if (!name) {
    name = `portal_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  const runner = em.queryRunner;
  // The driver's pool (pg.Pool) outside a transaction: it is not part of TypeORM's typed API.
  const client: PgQueryable = runner
    ? await runner.connect()
    : (em.connection.driver as unknown as { master: PgQueryable }).master;
  em.connection.logger.logQuery(text, values, runner);
  const result = await client.query({ name, text, values });
  return result.rows as T[];
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
