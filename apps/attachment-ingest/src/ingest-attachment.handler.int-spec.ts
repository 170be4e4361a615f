import { randomBytes, randomUUID } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { Logger } from '@nestjs/common';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import {
  AttachmentToolsService,
  PostgresBlobStore,
  reducedVariant,
  detectAttachmentType,
  type BlobStore,
  UploadHandOff,
} from '@portal/application';
import { AttachmentRepository, type BlobVariant } from '@portal/dal';
import { newConversation, seedOrg, sourcePage } from '@portal/dal/testing';
import { AttachmentId, type AttachmentManifest, ConversationId, OrgId, UserId } from '@portal/domain';
import type { ModelEntry } from '@portal/model';
import { QueueName, type PortalEvent, readRedisUrl } from '@portal/contracts';
import { BullMqClient, createQueueMicroservice } from '@portal/queue';
import { PortalMetrics } from '@portal/observability';
import { RedisConnections, ConversationEvents } from '@portal/redis';
import { createTestDatabase, deleteRedisPrefix, jobContext, type TestDatabase } from '@portal/testing';
import { lastValueFrom } from 'rxjs';
import { AppModule } from './app.module';
import { AttachmentEvents } from './attachment-events';
import { readIngestLimits, type AttachmentIngestConfig } from './config';
import { DocumentIngestService } from './document-ingest.service';
import { IngestAttachmentHandler } from './ingest-attachment.handler';
import { ImageRepository } from './media/image.repository';
import { PdfRepository } from './media/pdf.repository';
import { PictureIngestService } from './picture-ingest.service';
import { makePdf } from './testing/pdf.fixtures';

const ORG = OrgId('acme');
const SEED_VI = sourcePage('vi');
const redisUrl = readRedisUrl(process.env);
const redis = new RedisConnections({ url: redisUrl });
const prefix = `test-ingest-${randomBytes(4).toString('hex')}`;

const model = (id: string, vision: ModelEntry['vision']): ModelEntry => ({
  id,
  model: id,
  baseURL: 'http://127.0.0.1:1/v1',
  contextWindow: 100_000,
  vision,
  reasoning: false,
  price: { inputPerMTok: 0, outputPerMTok: 0, cachedInputPerMTok: 0 },
});
/** The agent's model reads small pictures; the catalogue's largest limits are 2048 × 768. */
const CATALOGUE = [
  model('gpt-test', { maxLongSide: 1000, maxShortSide: 500 }),
  model('big', { maxLongSide: 2048, maxShortSide: 768 }),
];

let db: TestDatabase;
let ds: DataSource;
let attachments: AttachmentRepository;
let blobs: BlobStore;
let events: ConversationEvents;
let handoff: UploadHandOff;
let client: BullMqClient;
let conversationId: ConversationId;

function config(limits: Partial<AttachmentIngestConfig['limits']> = {}) {
  return { catalogue: CATALOGUE, limits: { ...readIngestLimits({}), textPageChars: 1000, ...limits } };
}

function handler(limits: Partial<AttachmentIngestConfig['limits']> = {}, repo = attachments, store = blobs) {
  const cfg = config(limits);
  return new IngestAttachmentHandler(
    repo,
    store,
    new PictureIngestService(store, new ImageRepository(), cfg),
    new DocumentIngestService(repo, new PdfRepository(), cfg),
    new AttachmentEvents(events),
    new PortalMetrics(),
    handoff,
  );
}

/** As the gateway stores an upload: into the blob store, or (`handedOff`) into the hand-off only. */
async function upload(
  bytes: Buffer,
  filename: string,
  conversation: ConversationId | null = conversationId,
  handedOff = false,
): Promise<AttachmentId> {
  const type = detectAttachmentType(bytes);
  if (!type.ok) throw new Error(type.reason);
  const id = AttachmentId(randomUUID());
  const key = { orgId: ORG, attachmentId: id };
  if (handedOff) expect(await handoff.put(key, bytes, 60_000)).toBe(true);
  else await blobs.put({ ...key, variant: 'original' }, bytes);
  const created = await attachments.create(ORG, {
    id,
    userId: UserId('alice'),
    conversationId: conversation,
    kind: type.kind,
    filename,
    mimeType: type.mimeType,
    byteSize: bytes.length,
    sha256: 'x',
  });
  return created!.id;
}

const blob = (attachmentId: AttachmentId, variant: BlobVariant) =>
  blobs.get({ orgId: ORG, attachmentId, variant });
/** The copy made at ingest: for the conversation's model (gpt-test), else the largest limits. */
const OWN = reducedVariant(CATALOGUE[0].vision!);
const LARGEST = reducedVariant({ maxLongSide: 2048, maxShortSide: 768 });

const job = (attemptsMade = 0) => jobContext(client.queue(QueueName.Attachments), { attemptsMade });

async function ingest(
  bytes: Buffer,
  filename: string,
  opts: { conversation?: ConversationId | null; limits?: Partial<AttachmentIngestConfig['limits']> } = {},
) {
  const id = await upload(
    bytes,
    filename,
    opts.conversation === undefined ? conversationId : opts.conversation,
  );
  await handler(opts.limits).handle({ orgId: ORG, attachmentId: id }, job());
  return (await attachments.getManifest(ORG, id))!;
}

const solid = (width: number, height: number, background = '#c04020') =>
  sharp({ create: { width, height, channels: 3, background } });

beforeAll(async () => {
  db = await createTestDatabase();
  ds = db.dataSource;
  attachments = new AttachmentRepository(ds);
  blobs = new PostgresBlobStore(ds);
  events = new ConversationEvents(redis, prefix);
  handoff = new UploadHandOff(redis, prefix);
  client = new BullMqClient({ redis, prefix });
  await seedOrg(ds, ORG);
  conversationId = await newConversation(ds, ORG);
});

afterAll(async () => {
  await client.close();
  await deleteRedisPrefix(redisUrl, prefix);
  await redis.close();
  await db.drop();
});

describe('pictures', () => {
  it('keeps a small PNG at its size, re-encoded without metadata', async () => {
    const png = await solid(300, 200)
      .png()
      .withExif({ IFD0: { Artist: 'Somebody', Copyright: 'Somebody' } })
      .withXmp('<x:xmpmeta xmlns:x="adobe:ns:meta/"></x:xmpmeta>')
      .toBuffer();
    expect(await sharp(png).metadata()).toMatchObject({ exif: expect.any(Buffer), xmp: expect.any(Buffer) });
    const manifest = await ingest(png, 'small.png');
    expect(manifest).toMatchObject({
      kind: 'picture',
      mimeType: 'image/png',
      status: 'finished',
      error: null,
      picture: { width: 300, height: 200, originalWidth: 300, originalHeight: 200 },
    });
    const reduced = await sharp((await blob(manifest.id, OWN))!).metadata();
    expect(reduced).toMatchObject({ format: 'png', width: 300, height: 200 });
    expect(reduced.exif).toBeUndefined();
    expect(reduced.xmp).toBeUndefined();
    expect(await blob(manifest.id, 'original')).toEqual(png);
  });

  it('applies EXIF orientation 6 (width and height swap) and strips the EXIF', async () => {
    const jpeg = await solid(300, 100).jpeg().withMetadata({ orientation: 6 }).toBuffer();
    expect((await sharp(jpeg).metadata()).orientation).toBe(6);
    const manifest = await ingest(jpeg, 'photo.jpg');
    expect(manifest.picture).toEqual({ width: 100, height: 300, originalWidth: 100, originalHeight: 300 });
    const reduced = await sharp((await blob(manifest.id, OWN))!).metadata();
    expect(reduced).toMatchObject({ format: 'jpeg', width: 100, height: 300 });
    expect(reduced.orientation).toBeUndefined();
    expect(reduced.exif).toBeUndefined();
  });

  it('reads a WebP', async () => {
    const manifest = await ingest(await solid(64, 48).webp().toBuffer(), 'pic.webp');
    expect(manifest).toMatchObject({
      mimeType: 'image/webp',
      status: 'finished',
      picture: { width: 64, height: 48 },
    });
    const reduced = await sharp((await blob(manifest.id, OWN))!).metadata();
    expect(reduced.format).toBe('webp');
  });

  it('keeps the first frame of an animated GIF', async () => {
    const red = await solid(40, 20, '#ff0000').png().toBuffer();
    const blue = await solid(40, 20, '#0000ff').png().toBuffer();
    const gif = await sharp([red, blue], { join: { animated: true } })
      .gif()
      .toBuffer();
    expect((await sharp(gif).metadata()).pages).toBe(2);
    const manifest = await ingest(gif, 'anim.gif');
    expect(manifest).toMatchObject({
      mimeType: 'image/gif',
      status: 'finished',
      picture: { width: 40, height: 20 },
    });
    const reduced = (await blob(manifest.id, OWN))!;
    expect((await sharp(reduced).metadata()).pages ?? 1).toBe(1);
    const { data } = await sharp(reduced).raw().toBuffer({ resolveWithObject: true });
    expect([data[0], data[1], data[2]]).toEqual([255, 0, 0]);
  });

  it("reduces a large picture to the limits of the conversation's model, keeping the original", async () => {
    const png = await solid(3000, 1500).png().toBuffer();
    const manifest = await ingest(png, 'large.png');
    expect(manifest.picture).toEqual({ width: 1000, height: 500, originalWidth: 3000, originalHeight: 1500 });
    const reduced = await sharp((await blob(manifest.id, OWN))!).metadata();
    expect(reduced).toMatchObject({ width: 1000, height: 500 });
    expect(await blob(manifest.id, 'original')).toEqual(png);
  });

  it('without a conversation, reduces to the largest limits of the catalogue', async () => {
    const manifest = await ingest(await solid(3000, 1500).png().toBuffer(), 'large.png', {
      conversation: null,
    });
    expect(manifest.picture).toEqual({ width: 1536, height: 768, originalWidth: 3000, originalHeight: 1500 });
    expect(await sharp((await blob(manifest.id, LARGEST))!).metadata()).toMatchObject({ width: 1536 });
  });

  it('refuses a decompression bomb by its dimensions before decoding it', async () => {
    const manifest = await ingest(hugePng(60_000, 60_000), 'bomb.png');
    expect(manifest.status).toBe('failed');
    expect(manifest.error).toBe('the picture is 60000×60000 pixels, more than the limit of 50000000 pixels');
    expect(manifest.picture).toBeNull();
    expect(await blob(manifest.id, OWN)).toBeNull();
  });

  it('fails a corrupt picture with the reason', async () => {
    const png = await solid(50, 50).png().toBuffer();
    const manifest = await ingest(Buffer.concat([png.subarray(0, 40), Buffer.alloc(60, 7)]), 'broken.png');
    expect(manifest.status).toBe('failed');
    expect(manifest.error).toMatch(/^the picture cannot be decoded: /);
  });

  it('never says finished before the reduced copy is stored', async () => {
    const id = await upload(await solid(30, 30).png().toBuffer(), 'unstored.png');
    const full: BlobStore = Object.create(blobs);
    full.put = async () => {
      throw new Error('the volume is full');
    };
    await expect(
      handler({}, attachments, full).handle({ orgId: ORG, attachmentId: id }, job()),
    ).rejects.toThrow('the volume is full');
    expect(await attachments.getManifest(ORG, id)).toMatchObject({
      status: 'reading',
      picture: null,
    });
    expect(await blob(id, OWN)).toBeNull();
  });
});

describe('PDF documents', () => {
  const report = makePdf({
    pages: [
      ['Quarterly report', 'Revenue grew in the north.'],
      null,
      ['Outlook', 'The outlook for revenue is good.'],
    ],
    outline: [
      { title: 'Summary', page: 1, children: [{ title: 'Revenue', page: 1 }] },
      { title: 'Outlook', page: 3 },
    ],
  });

  it('reads text per page, marks the page with no text layer unreadable, takes headings from the outline', async () => {
    const manifest = await ingest(report, 'report.pdf');
    expect(manifest).toMatchObject({
      kind: 'document',
      mimeType: 'application/pdf',
      status: 'finished',
      pagesRead: 3,
      pageCount: 3,
      unreadablePages: [2],
      headings: ['Summary', 'Revenue', 'Outlook'],
      error: null,
    });
    expect(await attachments.getPages(ORG, manifest.id)).toEqual([
      { page: 1, text: 'Quarterly report\nRevenue grew in the north.' },
      { page: 2, text: '' },
      { page: 3, text: 'Outlook\nThe outlook for revenue is good.' },
    ]);
    // The whole text as a model reads it: the pages joined by a blank line, the empty one too.
    expect(manifest.chars).toBe(
      'Quarterly report\nRevenue grew in the north.\n\n\n\nOutlook\nThe outlook for revenue is good.'.length,
    );
  });

  it('without an outline, finds headings in the text', async () => {
    const pdf = makePdf({ pages: [['Introduction', 'This document explains how the portal reads files.']] });
    expect((await ingest(pdf, 'plain.pdf')).headings).toEqual(['Introduction']);
  });

  it('fails a truncated PDF with the reason', async () => {
    const manifest = await ingest(report.subarray(0, 120), 'cut.pdf');
    expect(manifest).toMatchObject({ status: 'failed', error: 'not a valid PDF (Invalid PDF structure.)' });
  });

  it('fails an encrypted PDF, whether or not it opens without a password', async () => {
    const open = await ingest(makePdf({ pages: [['Secret']], encryption: 'empty-password' }), 'drm.pdf');
    expect(open).toMatchObject({
      status: 'failed',
      error: 'the PDF is encrypted; encrypted PDFs are not read',
    });
    const locked = await ingest(makePdf({ pages: [['Secret']], encryption: 'password' }), 'locked.pdf');
    expect(locked).toMatchObject({ status: 'failed', error: 'the PDF is encrypted and needs a password' });
  });

  it('fails a PDF over the page cap', async () => {
    const manifest = await ingest(report, 'long.pdf', { limits: { pdfMaxPages: 2 } });
    expect(manifest).toMatchObject({
      status: 'failed',
      error: 'the PDF has 3 pages, more than the limit of 2',
    });
  });

  it('contains a reader that runs out of memory: the PDF fails with the reason, the worker goes on', async () => {
    const manifest = await ingest(report, 'hungry.pdf', { limits: { pdfMemoryMb: 1 } });
    expect(manifest).toMatchObject({
      status: 'failed',
      error: "the PDF needs more than the reader's 1 MB of memory",
    });
    expect((await ingest(report, 'after.pdf')).status).toBe('finished');
  });

  it('kills the reader of a PDF that passes the time limit and fails it with the reason', async () => {
    const manifest = await ingest(report, 'slow.pdf', { limits: { pdfTimeoutMs: 1 } });
    expect(manifest).toMatchObject({ status: 'failed', error: 'reading the PDF took longer than 0.001 s' });
  });
});

describe('text documents', () => {
  it('pages the Vietnamese seed page, finds its headings and makes it searchable with tone marks', async () => {
    const manifest = await ingest(Buffer.from(SEED_VI), 'dung-prompt.txt');
    const pageCount = Math.ceil(SEED_VI.length / 1000);
    expect(manifest).toMatchObject({
      mimeType: 'text/plain',
      status: 'finished',
      unreadablePages: [],
    });
    expect(manifest.pageCount).toBeGreaterThanOrEqual(pageCount);
    expect(manifest.pagesRead).toBe(manifest.pageCount);
    expect(manifest.headings.slice(0, 3)).toEqual(['Dựng prompt', 'Quy tắc chính', 'Ghép lượt']);
    const pages = await attachments.getPages(ORG, manifest.id);
    expect(pages.map((p) => p.text).join('')).toBe(SEED_VI.normalize('NFC'));
    expect(manifest.chars).toBe([...SEED_VI.normalize('NFC')].length + 2 * (pages.length - 1));

    const hits = await attachments.search(ORG, [manifest.id], 'nén ngữ cảnh');
    expect(hits.length).toBeGreaterThan(0);
    const best = pages.find((p) => p.page === hits[0].page)!;
    expect(best.text).toContain('ngữ cảnh');
    expect(hits[0].snippet).toMatch(/<b>ngữ<\/b> <b>cảnh<\/b>/);
  });

  it('reads markdown headings, CSV and JSON (no headings), each as UTF-8', async () => {
    const md = await ingest(Buffer.from('# Tệp đính kèm\n\nText.\n\n## Tìm kiếm\n\nMore.'), 'notes.txt');
    expect(md).toMatchObject({
      mimeType: 'text/markdown',
      status: 'finished',
      headings: ['Tệp đính kèm', 'Tìm kiếm'],
      pageCount: 1,
    });
    const csv = await ingest(Buffer.from('Name,City\nAn,Huế\nBình,Đà Nẵng\n'), 'people.csv');
    expect(csv).toMatchObject({ mimeType: 'text/csv', status: 'finished', headings: [], pageCount: 1 });
    const json = await ingest(Buffer.from('{"Title": "Báo cáo", "items": [1, 2]}'), 'data.json');
    expect(json).toMatchObject({ mimeType: 'application/json', status: 'finished', headings: [] });
    expect(await attachments.getPage(ORG, AttachmentId(json.id), 1)).toBe(
      '{"Title": "Báo cáo", "items": [1, 2]}',
    );
  });

  it('counts `chars` as the text a model reads: code points of the pages joined by a blank line', async () => {
    const text = `${'Tiếng Việt 😀👩‍👩‍👧\n'.repeat(120)}`;
    const manifest = await ingest(Buffer.from(text), 'notes.txt');
    const pages = await attachments.getPages(ORG, manifest.id);
    expect(pages.length).toBeGreaterThan(1);
    const sent = (await attachments.getTexts(ORG, [manifest.id])).get(manifest.id)!;
    expect(sent).toBe(pages.map((p) => p.text).join('\n\n'));
    expect(manifest.chars).toBe([...sent].length);
  });

  it('reads a UTF-16 text by its byte order mark, little- or big-endian', async () => {
    const text = '# Tiếng Việt\n\nCà phê sữa đá 😀';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from(text, 'utf16le').swap16()]);
    for (const bytes of [le, be]) {
      const manifest = await ingest(bytes, 'notes.md');
      expect(manifest).toMatchObject({
        status: 'finished',
        mimeType: 'text/markdown',
        headings: ['Tiếng Việt'],
      });
      expect((await attachments.getPages(ORG, manifest.id)).map((p) => p.text)).toEqual([text]);
    }
  });
});

describe('progress, events and idempotency', () => {
  it('updates the reading progress page by page and publishes it to the conversation', async () => {
    const before = await events.lastId(conversationId);
    const seen: number[] = [];
    const spy = Object.create(attachments) as AttachmentRepository;
    spy.update = async (orgId, id, patch) => {
      if (patch.pagesRead !== undefined) seen.push(patch.pagesRead);
      return attachments.update(orgId, id, patch);
    };
    spy.savePages = async (orgId, id, pages, patch, options) => {
      if (patch?.pagesRead !== undefined) seen.push(patch.pagesRead);
      return attachments.savePages(orgId, id, pages, patch, options);
    };
    const text = Array.from({ length: 5 }, (_, i) => `Page ${i + 1} `.padEnd(999, '.') + '\n').join('');
    const id = await upload(Buffer.from(text), 'five.txt');
    await handler({ pageBatch: 1, progressMs: 0 }, spy).handle({ orgId: ORG, attachmentId: id }, job());
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);

    const published = (await events.readAfter(conversationId, before))
      .map((e) => e.event as Extract<PortalEvent, { type: 'attachment_progress' }>)
      .filter((e) => e.type === 'attachment_progress' && e.attachment.id === id)
      .map((e) => [e.attachment.status, e.attachment.pagesRead, e.attachment.pageCount]);
    expect(published[0]).toEqual(['reading', 0, null]);
    expect(published).toContainEqual(['reading', 3, 5]);
    expect(published.at(-1)).toEqual(['finished', 5, 5]);
  });

  it('reads while `reading` is written, and writes nothing before it lands', async () => {
    const before = await events.lastId(conversationId);
    const written: string[] = [];
    const slow = Object.create(attachments) as AttachmentRepository;
    slow.update = async (orgId, id, patch) => {
      if (patch.status === 'reading') await new Promise((resolve) => setTimeout(resolve, 300));
      written.push(patch.status ?? 'progress');
      return attachments.update(orgId, id, patch);
    };
    const id = await upload(await solid(64, 48).png().toBuffer(), 'quick.png');
    await handler({}, slow).handle({ orgId: ORG, attachmentId: id }, job());
    expect(written).toEqual(['reading', 'finished']);
    const published = (await events.readAfter(conversationId, before))
      .map((e) => e.event as Extract<PortalEvent, { type: 'attachment_progress' }>)
      .filter((e) => e.type === 'attachment_progress' && e.attachment.id === id)
      .map((e) => e.attachment.status);
    expect(published).toEqual(['reading', 'finished']);
    expect((await attachments.getManifest(ORG, id))!.status).toBe('finished');
  });

  it('writes pages in batches, progress with them, and publishes the first and the last', async () => {
    const before = await events.lastId(conversationId);
    const writes: { pages: number[]; pagesRead?: number }[] = [];
    const spy = Object.create(attachments) as AttachmentRepository;
    spy.savePages = async (orgId, id, pages, patch, options) => {
      writes.push({ pages: pages.map((p) => p.page), pagesRead: patch?.pagesRead });
      return attachments.savePages(orgId, id, pages, patch, options);
    };
    const text = Array.from({ length: 100 }, (_, i) => `Trang ${i + 1} `.padEnd(999, '.') + '\n').join('');
    const id = await upload(Buffer.from(text), 'hundred.txt');
    await handler({ pageBatch: 32, progressMs: 60_000 }, spy).handle({ orgId: ORG, attachmentId: id }, job());
    expect(writes.map((w) => w.pages.length)).toEqual([32, 32, 32, 4]);
    expect(writes.map((w) => w.pagesRead)).toEqual([32, 64, 96, 100]);
    expect(writes.flatMap((w) => w.pages)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    const pages = await attachments.getPages(ORG, id);
    expect(pages.map((p) => p.text).join('')).toBe(text);
    expect((await attachments.search(ORG, [id], 'Trang 57'))[0]?.page).toBe(57);

    const published = (await events.readAfter(conversationId, before))
      .map((e) => e.event as Extract<PortalEvent, { type: 'attachment_progress' }>)
      .filter((e) => e.type === 'attachment_progress' && e.attachment.id === id)
      .map((e) => [e.attachment.status, e.attachment.pagesRead, e.attachment.pageCount]);
    expect(published).toEqual([
      ['reading', 0, null],
      ['reading', 0, 100],
      ['finished', 100, 100],
    ]);
  });

  it('running the job twice records nothing twice; a re-read after a crash replaces the pages', async () => {
    const text = 'Đoạn một.\n'.repeat(250);
    const id = await upload(Buffer.from(text), 'twice.txt');
    await handler().handle({ orgId: ORG, attachmentId: id }, job());
    const first = await attachments.getPages(ORG, id);
    const manifest = await attachments.getManifest(ORG, id);

    // Delivered again once finished: nothing is read, not even the file.
    const reads: string[] = [];
    const counted = Object.create(blobs) as BlobStore;
    counted.get = async (key) => {
      reads.push(key.variant);
      return blobs.get(key);
    };
    await handler({}, attachments, counted).handle({ orgId: ORG, attachmentId: id }, job());
    expect(reads).toEqual([]);
    expect(await attachments.getPages(ORG, id)).toEqual(first);
    expect(await attachments.getManifest(ORG, id)).toEqual(manifest);

    // A worker died mid-read: the row says `reading` and holds a stale page past the end.
    await attachments.update(ORG, id, { status: 'reading', pagesRead: 1 });
    await attachments.savePage(ORG, id, first.length + 1, 'stale');
    await handler().handle({ orgId: ORG, attachmentId: id }, job());
    expect(await attachments.getPages(ORG, id)).toEqual(first);
    expect(await attachments.getManifest(ORG, id)).toEqual(manifest);
    const [{ count }] = await ds.query(
      `SELECT count(*)::int AS count FROM attachment_pages WHERE attachment_id = $1`,
      [id],
    );
    expect(count).toBe(first.length);
  });

  it("an error that is not the file's is retried, and fails the attachment on the last attempt", async () => {
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const id = await upload(Buffer.from('Some text.'), 'flaky.txt');
    const broken = Object.create(attachments) as AttachmentRepository;
    broken.savePages = async () => {
      throw new Error('database went away');
    };
    await expect(handler({}, broken).handle({ orgId: ORG, attachmentId: id }, job())).rejects.toThrow(
      'database went away',
    );
    expect((await attachments.getManifest(ORG, id))!.status).toBe('reading');
    await expect(handler({}, broken).handle({ orgId: ORG, attachmentId: id }, job(2))).rejects.toThrow(
      'database went away',
    );
    expect(await attachments.getManifest(ORG, id)).toMatchObject({
      status: 'failed',
      error: 'internal error: database went away',
    });
  });
});

describe("the gateway's hand-off", () => {
  it('is read while the blob store has no copy yet, and dropped once the attachment is finished', async () => {
    const id = await upload(await solid(1600, 900).jpeg().toBuffer(), 'handed.jpg', conversationId, true);
    expect(await blob(id, 'original')).toBeNull();
    await handler().handle({ orgId: ORG, attachmentId: id }, job());
    expect(await attachments.getManifest(ORG, id)).toMatchObject({
      status: 'finished',
      picture: { originalWidth: 1600, originalHeight: 900 },
    });
    expect(await blob(id, OWN)).not.toBeNull();
    expect(await handoff.take({ orgId: ORG, attachmentId: id })).toBeNull();
  });

  it('is dropped when the file fails, and without it or a stored copy the attachment fails', async () => {
    const id = await upload(Buffer.from('Hello'), 'gone.txt');
    await handoff.put({ orgId: ORG, attachmentId: id }, Buffer.from([0xff, 0xfe, 0x00]), 60_000);
    await handler().handle({ orgId: ORG, attachmentId: id }, job());
    expect((await attachments.getManifest(ORG, id))!.status).toBe('failed');
    expect(await handoff.take({ orgId: ORG, attachmentId: id })).toBeNull();

    const missing = await upload(Buffer.from('Hello'), 'missing.txt', conversationId, true);
    await handoff.drop({ orgId: ORG, attachmentId: missing });
    await handler().handle({ orgId: ORG, attachmentId: missing }, job());
    expect(await attachments.getManifest(ORG, missing)).toMatchObject({
      status: 'failed',
      error: 'the uploaded file is missing',
    });
  });

  it("is scoped by org: another org's id finds nothing", async () => {
    const id = AttachmentId(randomUUID());
    await handoff.put({ orgId: ORG, attachmentId: id }, Buffer.from('secret'), 60_000);
    expect(await handoff.take({ orgId: OrgId('other'), attachmentId: id })).toBeNull();
    expect(await handoff.take({ orgId: ORG, attachmentId: id })).toEqual(Buffer.from('secret'));
  });
});

describe('the attachment-ingest app', () => {
  it('consumes `ingest-attachment` jobs from the queue', async () => {
    const app = await createQueueMicroservice(
      AppModule.forRoot({
        databaseUrl: db.url,
        databasePoolSize: 4,
        redis: { url: redisUrl },
        prefix,
        eventRetentionMs: 3_600_000,
        healthPort: 0,
        logLevel: 'silent',
        shutdownDeadlineMs: 1000,
        blobStore: 'postgres',
        ...config(),
      }),
      { queues: [QueueName.Attachments], logger: false },
    );
    try {
      await app.listen();
      const id = await upload(makePdf({ pages: [['Hello from the queue']] }), 'queued.pdf');
      await lastValueFrom(
        app.get(BullMqClient).emit(QueueName.Attachments, { orgId: ORG, attachmentId: id }),
      );
      let manifest = await attachments.getManifest(ORG, id);
      for (let i = 0; i < 200 && manifest?.status !== 'finished'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        manifest = await attachments.getManifest(ORG, id);
      }
      expect(manifest).toMatchObject({ status: 'finished', pageCount: 1 });
      expect(await attachments.getPage(ORG, id, 1)).toBe('Hello from the queue');
    } finally {
      await app.close();
    }
  });
});

describe('the model tools over ingested documents', () => {
  it('search_attachments finds the Vietnamese page and read_document reads it', async () => {
    const id = await upload(Buffer.from(SEED_VI), 'vi.txt');
    await handler().handle({ orgId: ORG, attachmentId: id }, job());
    const tools = new AttachmentToolsService(attachments);
    const scope = { orgId: ORG, conversationId };
    const found = await tools.searchAttachments(scope, { query: 'bộ nhớ ngắn hạn', attachment_ids: [id] });
    expect(found.outcome).toBe('ok');
    const page = Number(
      /"vi\.txt" \(attachment [0-9a-f-]+\), page (\d+): .*\*\*nhớ\*\*/.exec(found.content)?.[1],
    );
    expect(page).toBeGreaterThan(0);
    const read = await tools.readDocument(scope, { attachment_id: id, page });
    expect(read.content).toMatch(/bộ nhớ ngắn hạn/i);
    const manifest: AttachmentManifest = (await attachments.getManifest(ORG, id))!;
    expect(read.content).toContain(`page ${page} of ${manifest.pageCount}`);
  });
});

/** A PNG whose header claims `width` × `height` pixels, with almost no data behind it. */
function hugePng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([1, 0, 0, 0, 0], 8); // 1-bit greyscale
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.alloc(1024))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
