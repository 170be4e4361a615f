import type { AttachmentId, OrgId } from '@portal/domain';
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';
import type { EntityManager } from 'typeorm';
import { type BlobVariant, type Db, isUuid, managerOf, runSql } from '@portal/dal';
import { readByteaByCopy } from './bytea-copy.util';

/** One stored copy of an attachment; every key is scoped by its org. */
export interface BlobKey {
  orgId: OrgId;
  attachmentId: AttachmentId;
  variant: BlobVariant;
}

/**
 * Where attachment bytes live, apart from the rows that describe them. The gateway writes an
 * upload's bytes after its row, before the upload is answered 201 and, unless they were handed off
 * to the ingest worker through Redis (UploadHandOff), before its ingest is queued.
 * A key of another org, or whose attachment id is not a uuid, reads as missing.
 */
export interface BlobStore {
  /** Stores or replaces the bytes. */
  put(key: BlobKey, data: Buffer): Promise<void>;
  /** The bytes, or null when there are none under this key. */
  get(key: BlobKey): Promise<Buffer | null>;
  /** Removes every copy of the attachment (the original and each reduced one); none is no error. */
  removeAll(key: Omit<BlobKey, 'variant'>): Promise<void>;
}

/** Injection token of the apps' BlobStore (see BlobStoreModule). */
export const BLOB_STORE = Symbol('BLOB_STORE');

function checkPut(key: BlobKey): void {
  if (!isUuid(key.attachmentId)) throw new Error(`blob key: not an attachment id: ${key.attachmentId}`);
}

/** The default: the `attachment_blobs` table, so every pod sees every blob. */
export class PostgresBlobStore implements BlobStore {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  async put(key: BlobKey, data: Buffer): Promise<void> {
    checkPut(key);
    // The primary key has no org in it: a row of another org under the same id is never replaced.
    const { rows } = await runSql(
      this.em,
      `INSERT INTO attachment_blobs (attachment_id, variant, org_id, data) VALUES ($1, $2, $3, $4)
       ON CONFLICT (attachment_id, variant) DO UPDATE SET data = EXCLUDED.data
       WHERE attachment_blobs.org_id = EXCLUDED.org_id
       RETURNING 1`,
      [key.attachmentId, key.variant, key.orgId, data],
    );
    if (!rows.length) throw new Error(`blob ${key.attachmentId}/${key.variant} belongs to another org`);
  }

  async get(key: BlobKey): Promise<Buffer | null> {
    if (!isUuid(key.attachmentId)) return null;
    return readByteaByCopy(
      this.em,
      (literal) =>
        `SELECT data FROM attachment_blobs WHERE org_id = ${literal(key.orgId)}
         AND attachment_id = ${literal(key.attachmentId)} AND variant = ${literal(key.variant)}`,
    );
  }

  async removeAll(key: Omit<BlobKey, 'variant'>): Promise<void> {
    if (!isUuid(key.attachmentId)) return;
    await runSql(this.em, `DELETE FROM attachment_blobs WHERE org_id = $1 AND attachment_id = $2`, [
      key.orgId,
      key.attachmentId,
    ]);
  }
}

/** Files under `root` (a volume every pod mounts): `<root>/<org, hex>/<attachment id>/<variant>`. */
export class FileBlobStore implements BlobStore {
  constructor(private readonly root: string) {
    if (!isAbsolute(root)) throw new Error(`FileBlobStore: the root must be an absolute path: ${root}`);
  }

  async put(key: BlobKey, data: Buffer): Promise<void> {
    checkPut(key);
    const path = this.pathOf(key);
    const dir = join(path, '..');
    await mkdir(dir, { recursive: true });
    // Written aside and renamed over: a reader sees the old bytes or the new, never a part.
    const temp = join(dir, `.${key.variant}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const file = await open(temp, 'wx');
      try {
        await file.writeFile(data);
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
  }

  async get(key: BlobKey): Promise<Buffer | null> {
    if (!isUuid(key.attachmentId)) return null;
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async removeAll(key: Omit<BlobKey, 'variant'>): Promise<void> {
    if (!isUuid(key.attachmentId)) return;
    await rm(join(this.pathOf({ ...key, variant: 'original' }), '..'), { recursive: true, force: true });
  }

  /**
   * The org id in hex: no value of it can climb out of the root ('..' survives encodeURIComponent)
   * or meet another org's directory on a case-insensitive volume.
   */
  private pathOf(key: BlobKey): string {
    return join(this.root, Buffer.from(key.orgId, 'utf8').toString('hex'), key.attachmentId, key.variant);
  }
}

/**
 * The store `BLOB_STORE` names: unset or `postgres` for the table, `file:/absolute/path` for a
 * shared volume. Anything else throws, so a misconfigured pod fails at start.
 */
export function blobStoreFor(setting: string | undefined, db: Db): BlobStore {
  const value = setting?.trim() || 'postgres';
  if (value === 'postgres') return new PostgresBlobStore(db);
  // One leading slash: `file://host/x` is a URL, whose host would silently become a directory.
  const path = /^file:(\/(?!\/).*)$/.exec(value)?.[1];
  if (path) return new FileBlobStore(path);
  throw new Error(`BLOB_STORE must be "postgres" or "file:/absolute/path", not "${value}"`);
}
