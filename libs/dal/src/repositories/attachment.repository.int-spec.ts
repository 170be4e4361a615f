import { randomBytes } from 'node:crypto';
import { createScratchDatabase, type ScratchDatabase } from '../data-source';
import { AttachmentRepository, type NewAttachment } from './attachment.repository';
import { OrgRepository } from './org.repository';
import { UserRepository } from './user.repository';

/**
 * The attachment writes of the upload and ingest paths: one statement each, tenant-scoped, the
 * search index following every page.
 */
let db: ScratchDatabase;
let repo: AttachmentRepository;

const ACME = 'acme';
const GLOBEX = 'globex';
const upload = (original: Buffer, kind: NewAttachment['kind'] = 'document'): NewAttachment => ({
  userId: 'alice',
  kind,
  filename: 'file.bin',
  mimeType: kind === 'picture' ? 'image/jpeg' : 'application/pdf',
  byteSize: original.length,
  sha256: 'a'.repeat(64),
  original,
});

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'attachments' });
  repo = new AttachmentRepository(db.dataSource);
  for (const org of [ACME, GLOBEX]) await new OrgRepository(db.dataSource).upsert(org);
  await new UserRepository(db.dataSource).upsert(ACME, 'alice', 'member');
});

afterAll(() => db.drop());

describe('AttachmentRepository', () => {
  it('stores the original as it came, bytes of every value, large or empty-ish, and reads it back', async () => {
    const big = randomBytes(3 * 1024 * 1024 + 7);
    const tricky = Buffer.from([0, 0x5c, 0x27, 0xff, 0x0a, 0x0d, 0x00]);
    for (const bytes of [big, tricky, Buffer.from([1])]) {
      const { id } = (await repo.create(ACME, upload(bytes)))!;
      expect((await repo.getBlob(ACME, id))!.equals(bytes)).toBe(true);
      expect(await repo.getBlob(GLOBEX, id)).toBeNull();
      expect(await repo.getBlob(ACME, id, 'reduced')).toBeNull();
    }
    expect(await repo.getBlob(ACME, 'not-a-uuid')).toBeNull();
  });

  it("reads a blob inside a transaction, and an org id that needs quoting matches nobody's", async () => {
    const bytes = randomBytes(1000);
    const { id } = (await repo.create(ACME, upload(bytes)))!;
    await db.dataSource.transaction(async (em) => {
      expect((await new AttachmentRepository(em).getBlob(ACME, id))!.equals(bytes)).toBe(true);
    });
    expect(await repo.getBlob("acme' OR 'x'='x", id)).toBeNull();
    expect(await repo.getBlob('acme\\', id)).toBeNull();
  });

  it('answers the manifest and where it was uploaded for the ingest, for its own org only', async () => {
    const created = (await repo.create(ACME, upload(Buffer.from('%PDF-'))))!;
    expect(await repo.getForIngest(ACME, created.id)).toEqual({ manifest: created, conversationId: null });
    expect(await repo.getForIngest(GLOBEX, created.id)).toBeNull();
  });

  it('writes a batch of pages with the progress in one statement, and the last batch removes stale pages', async () => {
    const { id } = (await repo.create(ACME, upload(Buffer.from('%PDF-'))))!;
    await repo.savePage(ACME, id, 5, 'stale page from an earlier read');
    const first = await repo.savePages(
      ACME,
      id,
      [
        { page: 1, text: 'Tiếng Việt có dấu: nén ngữ cảnh' },
        { page: 2, text: 'quotes " and \\ backslash, {braces}, commas' },
      ],
      { status: 'reading', pageCount: 3, pagesRead: 2, unreadablePages: [] },
    );
    expect(first).toMatchObject({ status: 'reading', pagesRead: 2, pageCount: 3 });
    const last = await repo.savePages(
      ACME,
      id,
      [{ page: 3, text: '' }],
      {
        status: 'finished',
        pagesRead: 3,
        unreadablePages: [3],
        headings: ['Mở đầu'],
        chars: 70,
        error: null,
      },
      { lastPage: 3 },
    );
    expect(last).toMatchObject({
      status: 'finished',
      pagesRead: 3,
      unreadablePages: [3],
      headings: ['Mở đầu'],
    });
    expect(await repo.getPages(ACME, id)).toEqual([
      { page: 1, text: 'Tiếng Việt có dấu: nén ngữ cảnh' },
      { page: 2, text: 'quotes " and \\ backslash, {braces}, commas' },
      { page: 3, text: '' },
    ]);
    expect((await repo.search(ACME, [id], 'ngữ cảnh')).map((h) => h.page)).toEqual([1]);
    // Another org writes nothing.
    expect(
      await repo.savePages(GLOBEX, id, [{ page: 1, text: 'overwritten' }], { status: 'failed' }),
    ).toBeNull();
    expect(await repo.getPage(ACME, id, 1)).toBe('Tiếng Việt có dấu: nén ngữ cảnh');
    expect((await repo.getManifest(ACME, id))!.status).toBe('finished');
  });

  it('stores the reduced picture and finishes the manifest in one statement', async () => {
    const { id } = (await repo.create(ACME, upload(Buffer.from([0xff, 0xd8, 0xff]), 'picture')))!;
    const picture = { width: 10, height: 20, originalWidth: 100, originalHeight: 200 };
    const patch = { status: 'finished' as const, error: null, picture };
    expect(await repo.putBlobAndUpdate(GLOBEX, id, 'reduced', Buffer.from('x'), patch)).toBeNull();
    expect(await repo.getBlob(ACME, id, 'reduced')).toBeNull();
    const manifest = await repo.putBlobAndUpdate(ACME, id, 'reduced', Buffer.from('small'), patch);
    expect(manifest).toMatchObject({ status: 'finished', picture });
    expect(await repo.getBlob(ACME, id, 'reduced')).toEqual(Buffer.from('small'));
    await repo.putBlobAndUpdate(ACME, id, 'reduced', Buffer.from('smaller'), { picture: null });
    expect(await repo.getBlob(ACME, id, 'reduced')).toEqual(Buffer.from('smaller'));
    expect((await repo.getManifest(ACME, id))!.picture).toBeNull();
  });

  it('moves updated_at with every update', async () => {
    const { id } = (await repo.create(ACME, upload(Buffer.from('%PDF-'))))!;
    const at = async () =>
      (
        (await db.dataSource.query(`SELECT updated_at FROM attachments WHERE id = $1`, [id])) as {
          updated_at: Date;
        }[]
      )[0].updated_at;
    const before = await at();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await repo.update(ACME, id, { status: 'reading' })).toMatchObject({ status: 'reading' });
    expect((await at()).getTime()).toBeGreaterThan(before.getTime());
  });
});
