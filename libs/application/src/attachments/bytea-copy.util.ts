import type { PoolClient } from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { EntityManager } from 'typeorm';

/**
 * Reads one bytea value with `COPY (SELECT …) TO STDOUT (FORMAT binary)`: the bytes arrive as
 * they are stored (pg-copy-streams). A plain SELECT gets them as hex text, twice the size on the
 * wire and parsed back to bytes; node-postgres' binary result mode decodes every value as UTF-8
 * text, so it cannot carry bytes at all.
 *
 * `select` must be a SELECT of exactly one bytea column; COPY takes no parameters, so every
 * value in it must go through `literal` (node-postgres' escapeLiteral). Null when no row matches.
 */
export async function readByteaByCopy(
  em: EntityManager,
  select: (literal: (value: string) => string) => string,
): Promise<Buffer | null> {
  const runner = em.queryRunner ?? em.connection.createQueryRunner();
  const owned = !em.queryRunner;
  try {
    const client = (await runner.connect()) as PoolClient;
    const text = `COPY (${select((v) => client.escapeLiteral(v))}) TO STDOUT (FORMAT binary)`;
    const chunks: Buffer[] = [];
    for await (const chunk of client.query(copyTo(text))) chunks.push(chunk as Buffer);
    return firstValue(chunks);
  } finally {
    if (owned) await runner.release();
  }
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** The first column of the first row of a binary COPY stream, or null when it has no row. */
export function firstValue(chunks: Buffer[]): Buffer | null {
  const data = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  if (data.length < 19 || !data.subarray(0, 11).equals(SIGNATURE)) {
    throw new Error('COPY binary: the stream has no valid header');
  }
  let offset = 15;
  offset += 4 + data.readInt32BE(offset); // header extension
  const fields = data.readInt16BE(offset);
  if (fields === -1) return null;
  if (fields < 1) throw new Error('COPY binary: a row without columns');
  const length = data.readInt32BE(offset + 2);
  if (length < 0) return null;
  const start = offset + 6;
  if (start + length > data.length) throw new Error('COPY binary: the value is truncated');
  return data.subarray(start, start + length);
}
