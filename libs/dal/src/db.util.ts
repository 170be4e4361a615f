import { DataSource, type EntityManager } from 'typeorm';

/** Repositories take either the data source or a transaction's manager, so they compose. */
export type Db = DataSource | EntityManager;

export function managerOf(db: Db): EntityManager {
  return db instanceof DataSource ? db.manager : db;
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
