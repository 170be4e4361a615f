import { AttachmentId, OrgId, UserId } from '@portal/domain';
import { randomBytes, randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import type { INestMicroservice } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import sharp from 'sharp';
import { QueueName, readRedisUrl } from '@portal/contracts';
import { BLOB_STORE, detectAttachmentType, type BlobStore } from '@portal/application';
import { AttachmentRepository, OrgRepository, UserRepository } from '@portal/dal';
import { BullMqClient, createQueueMicroservice, WORKER_OPTIONS } from '@portal/queue';
import { createLogger, PortalMetrics } from '@portal/observability';
import { captureLogs, createTestDatabase, deleteRedisPrefix, type TestDatabase } from '@portal/testing';
import { AppModule } from './app.module';
import { readConfig } from './config';
import { threadsPerPicture } from './media/image.repository';

const ORG = OrgId('acme');
const redisUrl = readRedisUrl(process.env);
const prefix = `test-ingest-obs-${randomBytes(4).toString('hex')}`;
/** A document's words: stored as its pages, never logged. */
const DOCUMENT_TEXT = 'Confidential: the Oslo plant closes in March, 212 jobs affected.';

let db: TestDatabase;
let app: INestMicroservice;
let attachments: AttachmentRepository;
const logs = captureLogs();

beforeAll(async () => {
  db = await createTestDatabase();
  attachments = new AttachmentRepository(db.dataSource);
  await new OrgRepository(db.dataSource).upsert(ORG);
  await new UserRepository(db.dataSource).upsert(ORG, UserId('alice'), 'member');
  const config = readConfig({ DATABASE_URL: db.url, REDIS_URL: redisUrl, PORTAL_PREFIX: prefix });
  app = await createQueueMicroservice(AppModule.forRoot(config), {
    queues: [QueueName.Attachments],
    logger: createLogger({ name: 'attachment-ingest', destination: logs.destination }),
  });
  await app.listen();
});
afterAll(async () => {
  await app?.close();
  await deleteRedisPrefix(redisUrl, prefix);
  await db?.drop();
});

it('gives each picture it reads at once its share of the cores in libvips threads', () => {
  expect(sharp.concurrency()).toBe(
    threadsPerPicture(availableParallelism(), WORKER_OPTIONS[QueueName.Attachments].concurrency ?? 1),
  );
});

async function ingest(bytes: Buffer, filename: string): Promise<string> {
  const type = detectAttachmentType(bytes);
  if (!type.ok) throw new Error(type.reason);
  const id = randomUUID();
  await app
    .get<BlobStore>(BLOB_STORE)
    .put({ orgId: ORG, attachmentId: AttachmentId(id), variant: 'original' }, bytes);
  await attachments.create(ORG, {
    id,
    userId: UserId('alice'),
    conversationId: null,
    kind: type.kind,
    filename,
    mimeType: type.mimeType,
    byteSize: bytes.length,
    sha256: randomBytes(8).toString('hex'),
  });
  await lastValueFrom(app.get(BullMqClient).emit(QueueName.Attachments, { orgId: ORG, attachmentId: id }));
  for (let i = 0; i < 200; i++) {
    const status = (await attachments.getManifest(ORG, AttachmentId(id)))?.status;
    if (status === 'finished' || status === 'failed') break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  for (let i = 0; i < 40 && !logs.lines().some((l) => l.attachmentId === id && l.context === 'Queue'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return id;
}

describe('ingesting a document from the queue', () => {
  it('logs JSON lines with the org and attachment, never the text; counts duration and failures', async () => {
    const id = await ingest(Buffer.from(DOCUMENT_TEXT), 'plant.txt');
    expect(await attachments.getManifest(ORG, AttachmentId(id))).toMatchObject({ status: 'finished' });
    expect(await attachments.getPage(ORG, AttachmentId(id), 1)).toBe(DOCUMENT_TEXT);
    const broken = await ingest(Buffer.from('%PDF-1.7\nnot really a pdf'), 'broken.pdf');
    expect(await attachments.getManifest(ORG, AttachmentId(broken))).toMatchObject({ status: 'failed' });

    const lines = logs.lines();
    expect(lines).toContainEqual(
      expect.objectContaining({
        name: 'attachment-ingest',
        msg: 'ingest-attachment completed',
        orgId: ORG,
        attachmentId: id,
        queue: 'attachments',
      }),
    );
    const all = logs.raw.join('\n');
    expect(all).not.toContain('Oslo');
    expect(all).not.toContain('212 jobs');

    const text = await app.get(PortalMetrics).registry.metrics();
    expect(text).toContain('portal_ingest_duration_seconds_count{kind="document"} 1');
    expect(text).toContain('portal_ingest_failures_total{kind="document"} 1');
    expect(text).toMatch(/portal_job_duration_seconds_count\{queue="attachments",outcome="completed"\} 2/);
  });
});
