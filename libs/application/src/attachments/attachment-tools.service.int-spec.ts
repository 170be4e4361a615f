import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { AttachmentId, type AttachmentKind, OrgId, UserId } from '@portal/domain';
import {
  AttachmentRepository,
  createScratchDatabase,
  TurnRepository,
  type ManifestPatch,
  type ScratchDatabase,
} from '@portal/dal';
import { newConversation, seedOrg, sourcePage } from '@portal/dal/testing';
import { AttachmentToolsService, type AttachmentToolScope } from './attachment-tools.service';

const ACME = OrgId('acme');
const GLOBEX = OrgId('globex');
const SEED_VI = sourcePage('vi');

let db: ScratchDatabase;
let ds: DataSource;
let repo: AttachmentRepository;
let tools: AttachmentToolsService;
let scope: AttachmentToolScope;
let other: AttachmentToolScope;

/** An attachment with its pages stored and its manifest as given (finished unless said otherwise). */
async function attachment(
  target: AttachmentToolScope | null,
  filename: string,
  pages: string[],
  patch: ManifestPatch = {},
  opts: { orgId?: string; kind?: AttachmentKind } = {},
): Promise<string> {
  const orgId = opts.orgId ?? ACME;
  const created = await repo.create(OrgId(orgId), {
    id: randomUUID(),
    userId: UserId('alice'),
    conversationId: target?.conversationId ?? null,
    kind: opts.kind ?? 'document',
    filename,
    mimeType: opts.kind === 'picture' ? 'image/png' : 'text/plain',
    byteSize: 1,
    sha256: 'x',
  });
  for (const [i, text] of pages.entries())
    await repo.savePage(OrgId(orgId), AttachmentId(created!.id), i + 1, text);
  await repo.update(OrgId(orgId), AttachmentId(created!.id), {
    status: 'finished',
    pageCount: pages.length,
    pagesRead: pages.length,
    chars: pages.join('').length,
    ...patch,
  });
  return created!.id;
}

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'application_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  repo = new AttachmentRepository(ds);
  tools = new AttachmentToolsService(repo, { readChars: 1000, searchResults: 5 });
  await seedOrg(ds, ACME);
  await seedOrg(ds, GLOBEX);
  scope = { orgId: ACME, conversationId: await newConversation(ds, ACME) };
  other = { orgId: ACME, conversationId: await newConversation(ds, ACME) };
});
afterAll(async () => {
  await db.drop();
});

describe('read_document', () => {
  let id: string;
  const long = Array.from({ length: 2500 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');

  beforeAll(async () => {
    id = await attachment(scope, 'report.txt', [long, '', 'The last page.'], { unreadablePages: [2] });
  });

  it('reads a bounded slice of a page and says how to go on within it', async () => {
    const first = await tools.readDocument(scope, { attachment_id: id });
    expect(first.outcome).toBe('ok');
    expect(first.content).toBe(
      [
        `Document "report.txt" (attachment ${id}), page 1 of 3, characters 0–1000 of 2500:`,
        long.slice(0, 1000),
        '---',
        `More on this page: call read_document with {"attachment_id":"${id}","page":1,"offset":1000}.`,
      ].join('\n'),
    );
    const last = await tools.readDocument(scope, { attachment_id: id, page: 1, offset: 2000 });
    expect(last.content).toContain('characters 2000–2500 of 2500:');
    expect(last.content).toContain(long.slice(2000));
    expect(last.content).toContain(`Next page: call read_document with {"attachment_id":"${id}","page":2}.`);
  });

  it('takes numbers sent as strings, as models sometimes do', async () => {
    const read = await tools.readDocument(scope, {
      attachment_id: id,
      page: '1' as never,
      offset: '1000' as never,
    });
    expect(read.content).toContain('characters 1000–2000 of 2500:');
  });

  it('says a page is unreadable and where to go next, and where the document ends', async () => {
    const blank = await tools.readDocument(scope, { attachment_id: id, page: 2 });
    expect(blank).toEqual({
      outcome: 'ok',
      content:
        `Document "report.txt" (attachment ${id}), page 2: this page has no readable text (no text layer, or it failed to read).\n` +
        `Next page: call read_document with {"attachment_id":"${id}","page":3}.`,
    });
    const end = await tools.readDocument(scope, { attachment_id: id, page: 3 });
    expect(end.content).toMatch(
      /page 3 of 3, characters 0–14 of 14:\nThe last page\.\n---\nEnd of the document\.$/,
    );
  });

  it('refuses pages and offsets that do not exist', async () => {
    expect(await tools.readDocument(scope, { attachment_id: id, page: 4 })).toEqual({
      outcome: 'error',
      content: `Document "report.txt" (attachment ${id}) has 3 pages; there is no page 4.`,
    });
    expect((await tools.readDocument(scope, { attachment_id: id, page: 3, offset: 14 })).content).toMatch(
      /has 14 characters; offset 14 is past its end/,
    );
    expect((await tools.readDocument(scope, { attachment_id: id, page: 0 })).outcome).toBe('error');
    expect((await tools.readDocument(scope, { attachment_id: id, offset: -1 })).outcome).toBe('error');
  });

  it("reads only the conversation's attachments, including those its messages carry", async () => {
    const elsewhere = await tools.readDocument(other, { attachment_id: id });
    expect(elsewhere.outcome).toBe('error');
    expect(elsewhere.content).toMatch(new RegExp(`^No attachment ${id} in this conversation\\.`));
    const foreign = await attachment(null, 'globex.txt', ['secret'], {}, { orgId: GLOBEX });
    expect((await tools.readDocument(scope, { attachment_id: foreign })).outcome).toBe('error');
    expect((await tools.readDocument(scope, { attachment_id: 'not-a-uuid' })).outcome).toBe('error');

    const carried = await attachment(null, 'carried.txt', ['Sent with a message.']);
    await new TurnRepository(ds).createWithUserMessage(ACME, {
      conversationId: other.conversationId,
      effort: 'low',
      model: 'gpt-test',
      text: 'see attached',
      attachmentIds: [carried],
    });
    expect((await tools.readDocument(other, { attachment_id: carried })).content).toContain(
      'Sent with a message.',
    );
  });

  it('explains pictures, pages not read yet and documents that failed', async () => {
    const picture = await attachment(scope, 'cat.png', [], {}, { kind: 'picture' });
    expect((await tools.readDocument(scope, { attachment_id: picture })).content).toMatch(/is a picture/);

    const reading = await attachment(scope, 'big.txt', ['one', 'two'], {
      status: 'reading',
      pageCount: 5,
      pagesRead: 2,
    });
    const read = await tools.readDocument(scope, { attachment_id: reading, page: 2 });
    expect(read).toMatchObject({ outcome: 'ok', content: expect.stringContaining('page 2 of 5') });
    expect(read.content).toContain(
      `Next page: call read_document with {"attachment_id":"${reading}","page":3}.`,
    );
    expect(await tools.readDocument(scope, { attachment_id: reading, page: 4 })).toEqual({
      outcome: 'error',
      content: `Document "big.txt" (attachment ${reading}): page 4 is not read yet (2 of 5 pages read so far). Try again shortly, or read a page already read.`,
    });

    const failed = await attachment(scope, 'bad.pdf', [], {
      status: 'failed',
      error: 'the PDF is encrypted',
      pageCount: null,
    });
    expect(await tools.readDocument(scope, { attachment_id: failed })).toEqual({
      outcome: 'error',
      content: `Document "bad.pdf" (attachment ${failed}) could not be read: the PDF is encrypted.`,
    });
  });
});

describe('search_attachments', () => {
  let vi: string;
  let en: string;

  beforeAll(async () => {
    const paragraphs = SEED_VI.split('\n');
    const third = Math.ceil(paragraphs.length / 3);
    vi = await attachment(
      scope,
      'dung-prompt.txt',
      [0, 1, 2].map((i) => paragraphs.slice(i * third, (i + 1) * third).join('\n')),
    );
    en = await attachment(scope, 'notes.txt', [
      'Revenue grew. Revenue is up, revenue everywhere: revenue.',
      'The north region reported revenue once.',
      'Nothing to see here.',
    ]);
    await attachment(other, 'elsewhere.txt', ['revenue revenue revenue revenue']);
  });

  it('ranks pages, names the attachment and the page, and marks the match in the snippet', async () => {
    const found = await tools.searchAttachments(scope, { query: 'revenue' });
    expect(found.outcome).toBe('ok');
    const lines = found.content.split('\n');
    expect(lines[0]).toMatch(/^Pages matching "revenue" in \d+ documents, best first:$/);
    expect(lines[1]).toMatch(
      new RegExp(`^1\\. "notes\\.txt" \\(attachment ${en}\\), page 1: .*\\*\\*Revenue\\*\\* grew`),
    );
    expect(lines[2]).toMatch(
      new RegExp(`^2\\. "notes\\.txt" \\(attachment ${en}\\), page 2: .*\\*\\*revenue\\*\\*`),
    );
    expect(found.content).not.toContain('elsewhere.txt');
    expect(found.content).toContain('Read a whole page with read_document (attachment_id, page).');
  });

  it('finds Vietnamese with tone marks, whatever the case or Unicode form of the query', async () => {
    const pages = await repo.getPages(ACME, AttachmentId(vi));
    const query = 'NGỮ CẢNH'.normalize('NFD');
    const found = await tools.searchAttachments(scope, { query, attachment_ids: [vi] });
    const hit = /"dung-prompt\.txt" \(attachment [^)]+\), page (\d+): (.*)/.exec(found.content);
    expect(hit).not.toBeNull();
    expect(hit![2]).toMatch(/\*\*ngữ\*\* \*\*cảnh\*\*/i);
    expect(pages[Number(hit![1]) - 1].text.toLowerCase()).toContain('ngữ cảnh');
    expect(found.content).not.toContain('notes.txt');
  });

  it('falls back to any of the words when no page holds them all', async () => {
    const found = await tools.searchAttachments(scope, { query: 'revenue xylophone' });
    expect(found.content).toMatch(/^Pages matching "revenue xylophone"/);
    expect(found.content).toContain(`(attachment ${en}), page 1`);
  });

  it('says so when nothing matches, and notes documents still being read or failed', async () => {
    await attachment(scope, 'half.txt', ['x'], { status: 'reading', pageCount: 4, pagesRead: 1 });
    const none = await tools.searchAttachments(scope, { query: 'xylophone' });
    expect(none.outcome).toBe('ok');
    expect(none.content).toMatch(/^No page matches "xylophone" in \d+ documents\./);
    expect(none.content).toMatch(/"half\.txt" \([^)]+\) is still being read \(1\/4 pages\)/);
    expect(none.content).toMatch(/"bad\.pdf" \([^)]+\) could not be read: the PDF is encrypted/);
  });

  it("searches only the conversation's documents, and says which asked ids it left out", async () => {
    const foreign = await attachment(other, 'theirs.txt', ['revenue']);
    const found = await tools.searchAttachments(scope, { query: 'revenue', attachment_ids: [en, foreign] });
    expect(found.content).toContain(`Not documents of this conversation, left out: ${foreign}.`);
    expect(found.content).not.toContain('theirs.txt');
    expect(
      await tools.searchAttachments(scope, { query: 'revenue', attachment_ids: [foreign] }),
    ).toMatchObject({
      outcome: 'error',
    });
    expect(await tools.searchAttachments(scope, { query: '   ' })).toEqual({
      outcome: 'error',
      content: '`query` must not be empty.',
    });
  });
});
