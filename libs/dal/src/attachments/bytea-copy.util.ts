import type { EntityManager } from 'typeorm';

/**
 * Reads one bytea value with `COPY (SELECT …) TO STDOUT (FORMAT binary)`: the bytes arrive as
 * they are stored. A plain SELECT gets them as hex text (twice the size on the wire, then decoded
 * to a string and parsed back to bytes, about 30 ms for a 4 MB picture against about 10 ms here),
 * and node-postgres' binary result mode decodes every value as UTF-8 text, so it cannot carry
 * bytes at all.
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
    const client = (await runner.connect()) as PgClient;
    const copy = new CopyOut(`COPY (${select((v) => client.escapeLiteral(v))}) TO STDOUT (FORMAT binary)`);
    client.query(copy);
    return firstValue(await copy.result);
  } finally {
    if (owned) await runner.release();
  }
}

interface PgClient {
  escapeLiteral(value: string): string;
  query(submittable: CopyOut): unknown;
}

interface PgConnection {
  query(text: string): void;
}

/**
 * A node-postgres Submittable (the interface pg-cursor and pg-copy-streams use): it sends one
 * simple query and collects its CopyData messages. The client calls these handlers; each chunk is
 * copied at once because the protocol parser reuses its buffer.
 */
class CopyOut {
  readonly result: Promise<Buffer[]>;
  private readonly chunks: Buffer[] = [];
  private settled = false;
  private resolve!: (chunks: Buffer[]) => void;
  private reject!: (err: Error) => void;

  constructor(private readonly text: string) {
    this.result = new Promise<Buffer[]>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: PgConnection): void {
    connection.query(this.text);
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    this.chunks.push(Buffer.from(msg.chunk));
  }

  handleError(err: Error): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  handleReadyForQuery(): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(this.chunks);
  }

  handleCommandComplete(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {
    this.handleError(new Error('COPY FROM is not expected here'));
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
