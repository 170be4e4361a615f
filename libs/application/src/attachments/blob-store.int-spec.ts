import { AttachmentId, OrgId } from '@portal/domain';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createScratchDatabase, type ScratchDatabase } from '@portal/dal';
import { blobStoreFor, FileBlobStore, PostgresBlobStore, type BlobKey, type BlobStore } from './blob-store';

const ACME = OrgId('acme');
const GLOBEX = OrgId('globex');

let db: ScratchDatabase;
let root: string;

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'blobs', serverUrl: process.env['DATABASE_URL'] });
  root = mkdtempSync(join(tmpdir(), 'portal-blobs-'));
});

afterAll(async () => {
  await db.drop();
  rmSync(root, { recursive: true, force: true });
});

const key = (over: Partial<BlobKey> = {}): BlobKey => ({
  orgId: ACME,
  attachmentId: AttachmentId(randomUUID()),
  variant: 'original',
  ...over,
});

/** Every file under the directory, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)));
}

describe.each([
  ['PostgresBlobStore', (): BlobStore => new PostgresBlobStore(db.dataSource)],
  ['FileBlobStore', (): BlobStore => new FileBlobStore(root)],
])('%s', (_name, makeStore) => {
  let store: BlobStore;
  beforeAll(() => {
    store = makeStore();
  });

  it('reads back exactly the bytes it stored, large or tricky', async () => {
    const big = randomBytes(4 * 1024 * 1024 + 7);
    const tricky = Buffer.from([0, 0x5c, 0x27, 0xff, 0x0a, 0x0d, 0x00]);
    for (const bytes of [big, tricky, Buffer.from([1])]) {
      const k = key();
      await store.put(k, bytes);
      expect((await store.get(k))!.equals(bytes)).toBe(true);
    }
  });

  it('replaces the bytes on a second put', async () => {
    const k = key();
    await store.put(k, Buffer.from('first, and longer'));
    await store.put(k, Buffer.from('second'));
    expect(await store.get(k)).toEqual(Buffer.from('second'));
  });

  it('answers null for a missing key and an attachment id that is not a uuid', async () => {
    expect(await store.get(key())).toBeNull();
    expect(await store.get(key({ attachmentId: AttachmentId('not-a-uuid') }))).toBeNull();
    expect(await store.get(key({ attachmentId: AttachmentId('../../etc/passwd') }))).toBeNull();
    await expect(store.put(key({ attachmentId: AttachmentId('../x') }), Buffer.from('x'))).rejects.toThrow(
      'not an attachment id',
    );
  });

  it("keeps every org to its own: another org's key reads null and writes nothing of the owner's", async () => {
    const k = key();
    await store.put(k, Buffer.from('secret'));
    for (const orgId of [GLOBEX, "acme' OR 'x'='x", 'acme\\', 'ACME', '']) {
      expect(await store.get({ ...k, orgId: OrgId(orgId) })).toBeNull();
    }
    await store.put({ ...k, orgId: GLOBEX }, Buffer.from('overwritten')).catch(() => undefined);
    expect(await store.get(k)).toEqual(Buffer.from('secret'));
  });

  it('keeps the variants apart', async () => {
    const original = key();
    const reduced: BlobKey = { ...original, variant: 'reduced-2048x768' };
    await store.put(original, Buffer.from('original'));
    expect(await store.get(reduced)).toBeNull();
    await store.put(reduced, Buffer.from('reduced'));
    expect(await store.get(original)).toEqual(Buffer.from('original'));
    expect(await store.get(reduced)).toEqual(Buffer.from('reduced'));
  });

  it("removes every copy of one attachment, and nothing of another's or another org's", async () => {
    const doomed = key();
    const kept = key();
    const variants = ['original', 'reduced-2048x768', 'reduced-512x512'] as const;
    for (const variant of variants) {
      await store.put({ ...doomed, variant }, Buffer.from(variant));
      await store.put({ ...kept, variant }, Buffer.from(variant));
    }
    await store.removeAll({ orgId: GLOBEX, attachmentId: doomed.attachmentId });
    expect(await store.get(doomed)).not.toBeNull();
    await store.removeAll({ orgId: ACME, attachmentId: doomed.attachmentId });
    for (const variant of variants) {
      expect(await store.get({ ...doomed, variant })).toBeNull();
      expect((await store.get({ ...kept, variant }))?.toString()).toBe(variant);
    }
    await store.removeAll({ orgId: ACME, attachmentId: doomed.attachmentId });
    await store.removeAll({ orgId: ACME, attachmentId: AttachmentId('../..') });
    expect((await store.get(kept))?.toString()).toBe('original');
  });
});

describe('PostgresBlobStore', () => {
  it('reads inside a transaction the blob the transaction wrote, before it commits', async () => {
    const k = key();
    await db.dataSource.transaction(async (em) => {
      const store = new PostgresBlobStore(em);
      await store.put(k, Buffer.from('pending'));
      expect(await store.get(k)).toEqual(Buffer.from('pending'));
      expect(await new PostgresBlobStore(db.dataSource).get(k)).toBeNull();
    });
    expect(await new PostgresBlobStore(db.dataSource).get(k)).toEqual(Buffer.from('pending'));
  });

  it("refuses to replace another org's blob under the same id", async () => {
    const store = new PostgresBlobStore(db.dataSource);
    const k = key();
    await store.put(k, Buffer.from('mine'));
    await expect(store.put({ ...k, orgId: GLOBEX }, Buffer.from('theirs'))).rejects.toThrow(
      'belongs to another org',
    );
  });
});

describe('FileBlobStore', () => {
  it('keeps an org id like ../../etc inside the root, apart from every other org', async () => {
    const dir = mkdtempSync(join(root, 'traversal-'));
    const store = new FileBlobStore(dir);
    const k = key({ orgId: OrgId('../../etc') });
    await store.put(k, Buffer.from('inside'));
    await store.put({ ...k, orgId: OrgId('..') }, Buffer.from('dots'));
    await store.put({ ...k, orgId: OrgId('%2E%2E') }, Buffer.from('encoded'));
    expect(await store.get(k)).toEqual(Buffer.from('inside'));
    expect(await store.get({ ...k, orgId: OrgId('..') })).toEqual(Buffer.from('dots'));
    const files = filesUnder(dir);
    expect(files).toHaveLength(3);
    for (const file of files) expect(file).toMatch(/^[0-9a-f]+\/[0-9a-f-]{36}\/original$/);
  });

  it('leaves no temporary file after a put', async () => {
    const dir = mkdtempSync(join(root, 'temp-'));
    const store = new FileBlobStore(dir);
    const k = key();
    await store.put(k, randomBytes(1024 * 1024));
    await store.put(k, Buffer.from('again'));
    await store.put({ ...k, variant: 'reduced-2048x768' }, Buffer.from('small'));
    expect(filesUnder(dir).sort()).toEqual([
      `${Buffer.from(ACME).toString('hex')}/${k.attachmentId}/original`,
      `${Buffer.from(ACME).toString('hex')}/${k.attachmentId}/reduced-2048x768`,
    ]);
  });

  it('wants an absolute root', () => {
    expect(() => new FileBlobStore('blobs')).toThrow('absolute');
  });
});

describe('blobStoreFor', () => {
  it('is Postgres when BLOB_STORE is unset or `postgres`', () => {
    expect(blobStoreFor(undefined, db.dataSource)).toBeInstanceOf(PostgresBlobStore);
    expect(blobStoreFor('', db.dataSource)).toBeInstanceOf(PostgresBlobStore);
    expect(blobStoreFor('postgres', db.dataSource)).toBeInstanceOf(PostgresBlobStore);
  });

  it('is files under the path of `file:/abs/path`', async () => {
    const store = blobStoreFor(`file:${root}`, db.dataSource);
    expect(store).toBeInstanceOf(FileBlobStore);
    const k = key();
    await store.put(k, Buffer.from('on the volume'));
    expect(await new FileBlobStore(root).get(k)).toEqual(Buffer.from('on the volume'));
  });

  it('throws for anything else', () => {
    for (const value of ['s3://bucket', 'file:relative/path', 'file:', 'Postgres', 'file://host/x']) {
      expect(() => blobStoreFor(value, db.dataSource)).toThrow(
        `BLOB_STORE must be "postgres" or "file:/absolute/path", not "${value}"`,
      );
    }
  });
});
