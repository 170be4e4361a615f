import { AgentId, AttachmentId, OrgId, UserId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import { createScratchDatabase, type ScratchDatabase } from '../data-source';
import { AgentRepository } from './agent.repository';
import { AttachmentRepository, type NewAttachment } from './attachment.repository';
import { ConversationRepository } from './conversation.repository';
import { OrgRepository } from './org.repository';
import { UserRepository } from './user.repository';

/**
 * The attachment writes of the upload and ingest paths: one statement each, tenant-scoped, the
 * search index following every page. The bytes are the BlobStore's (blob-store.int-spec).
 */
let db: ScratchDatabase;
let repo: AttachmentRepository;

const ACME = OrgId('acme');
const GLOBEX = OrgId('globex');
const upload = (kind: NewAttachment['kind'] = 'document'): NewAttachment => ({
  id: randomUUID(),
  userId: UserId('alice'),
  kind,
  filename: 'file.bin',
  mimeType: kind === 'picture' ? 'image/jpeg' : 'application/pdf',
  byteSize: 5,
  sha256: 'a'.repeat(64),
});

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'attachments', serverUrl: process.env['DATABASE_URL'] });
  repo = new AttachmentRepository(db.dataSource);
  for (const org of [ACME, GLOBEX]) await new OrgRepository(db.dataSource).upsert(org);
  await new UserRepository(db.dataSource).upsert(ACME, UserId('alice'), 'member');
});

afterAll(() => db.drop());

describe('AttachmentRepository', () => {
  it("creates the row under the caller's id, once, and writes no blob", async () => {
    const input = upload();
    expect(await repo.create(ACME, input)).toMatchObject({ id: input.id, status: 'pending' });
    const blobs = await db.dataSource.query(`SELECT 1 FROM attachment_blobs WHERE attachment_id = $1`, [
      input.id,
    ]);
    expect(blobs).toEqual([]);
    await expect(repo.create(ACME, input)).rejects.toThrow();
  });

  it("answers the manifest, where it was uploaded and that agent's model for the ingest, for its own org only", async () => {
    const created = (await repo.create(ACME, upload()))!;
    expect(await repo.getForIngest(ACME, AttachmentId(created.id))).toEqual({
      manifest: created,
      conversationId: null,
      model: null,
    });
    expect(await repo.getForIngest(GLOBEX, AttachmentId(created.id))).toBeNull();

    await new AgentRepository(db.dataSource).upsert(ACME, {
      id: AgentId('seer'),
      name: 'Seer',
      instructions: 'See.',
      model: 'vision-model',
      effort: 'low',
      tools: [],
      reviewer: null,
      compactionGuidance: null,
    });
    const conversation = (await new ConversationRepository(db.dataSource).create(
      ACME,
      UserId('alice'),
      AgentId('seer'),
    ))!;
    const inConversation = (await repo.create(ACME, {
      ...upload('picture'),
      conversationId: conversation.id,
    }))!;
    expect(await repo.getForIngest(ACME, AttachmentId(inConversation.id))).toEqual({
      manifest: inConversation,
      conversationId: conversation.id,
      model: 'vision-model',
    });
  });

  it('writes a batch of pages with the progress in one statement, and the last batch removes stale pages', async () => {
    const { id } = (await repo.create(ACME, upload()))!;
    await repo.savePage(ACME, AttachmentId(id), 5, 'stale page from an earlier read');
    const first = await repo.savePages(
      ACME,
      AttachmentId(id),
      [
        { page: 1, text: 'Tiếng Việt có dấu: nén ngữ cảnh' },
        { page: 2, text: 'quotes " and \\ backslash, {braces}, commas' },
      ],
      { status: 'reading', pageCount: 3, pagesRead: 2, unreadablePages: [] },
    );
    expect(first).toMatchObject({ status: 'reading', pagesRead: 2, pageCount: 3 });
    const last = await repo.savePages(
      ACME,
      AttachmentId(id),
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
    expect(await repo.getPages(ACME, AttachmentId(id))).toEqual([
      { page: 1, text: 'Tiếng Việt có dấu: nén ngữ cảnh' },
      { page: 2, text: 'quotes " and \\ backslash, {braces}, commas' },
      { page: 3, text: '' },
    ]);
    expect((await repo.search(ACME, [id], 'ngữ cảnh')).map((h) => h.page)).toEqual([1]);
    // Another org writes nothing.
    expect(
      await repo.savePages(GLOBEX, AttachmentId(id), [{ page: 1, text: 'overwritten' }], {
        status: 'failed',
      }),
    ).toBeNull();
    expect(await repo.getPage(ACME, AttachmentId(id), 1)).toBe('Tiếng Việt có dấu: nén ngữ cảnh');
    expect((await repo.getManifest(ACME, AttachmentId(id)))!.status).toBe('finished');
  });

  it('finishes a picture with its dimensions, for its own org only', async () => {
    const { id } = (await repo.create(ACME, upload('picture')))!;
    const picture = { width: 10, height: 20, originalWidth: 100, originalHeight: 200 };
    const patch = { status: 'finished' as const, error: null, picture };
    expect(await repo.update(GLOBEX, AttachmentId(id), patch)).toBeNull();
    expect(await repo.update(ACME, AttachmentId(id), patch)).toMatchObject({ status: 'finished', picture });
    await repo.update(ACME, AttachmentId(id), { picture: null });
    expect((await repo.getManifest(ACME, AttachmentId(id)))!.picture).toBeNull();
  });

  it('moves updated_at with every update', async () => {
    const { id } = (await repo.create(ACME, upload()))!;
    const at = async () =>
      (
        (await db.dataSource.query(`SELECT updated_at FROM attachments WHERE id = $1`, [id])) as {
          updated_at: Date;
        }[]
      )[0].updated_at;
    const before = await at();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await repo.update(ACME, AttachmentId(id), { status: 'reading' })).toMatchObject({
      status: 'reading',
    });
    expect((await at()).getTime()).toBeGreaterThan(before.getTime());
  });
});
