import { AgentId, AttachmentId, OrgId, UserId } from '@portal/domain';
import fastifyMultipart from '@fastify/multipart';
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import sharp from 'sharp';
import { QueueName, readRedisUrl } from '@portal/contracts';
import { RedisModule } from '@portal/redis';
import { BLOB_STORE, BlobStoreModule, type BlobStore, UploadHandOff } from '@portal/application';
import {
  AgentRepository,
  AttachmentRepository,
  ConversationRepository,
  DalModule,
  OrgRepository,
  UserRepository,
} from '@portal/dal';
import { BullMqClient, QueueModule } from '@portal/queue';
import { createTestDatabase, deleteRedisPrefix, type TestDatabase } from '@portal/testing';
import { ApiErrorFilter } from '../common/api-error.filter';
import { Authenticator } from '../auth/authenticator.service';
import { SessionService } from '../auth/session.service';
import { AuthGuard } from '../common/auth.guard';
import { GATEWAY_CONFIG } from '../config';
import { AttachmentsModule } from './attachments.module';
import { AttachmentsService } from './attachments.service';

const redisUrl = readRedisUrl(process.env);
const prefix = `test-attach-${randomBytes(4).toString('hex')}`;
const MAX_BYTES = 64 * 1024;
const ALICE = 'pk_alice_attachments';
const BOB = 'pk_bob_attachments';
const CAROL = 'pk_carol_attachments';

let db: TestDatabase;
let app: NestFastifyApplication;
let base: string;
let aliceConversation: string;
let bobConversation: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const ds = db.dataSource;
  const users = new UserRepository(ds);
  for (const org of ['acme', 'globex']) await new OrgRepository(ds).upsert(OrgId(org));
  await users.upsert(OrgId('acme'), UserId('alice'), 'member');
  await users.upsert(OrgId('acme'), UserId('bob'), 'member');
  await users.upsert(OrgId('globex'), UserId('carol'), 'admin');
  await users.addApiKey(OrgId('acme'), UserId('alice'), ALICE);
  await users.addApiKey(OrgId('acme'), UserId('bob'), BOB);
  await users.addApiKey(OrgId('globex'), UserId('carol'), CAROL);
  await new AgentRepository(ds).upsert(OrgId('acme'), {
    id: AgentId('helper'),
    name: 'Helper',
    instructions: 'Help.',
    model: 'portal-local',
    effort: 'low',
    tools: [],
    reviewer: null,
    compactionGuidance: null,
  });
  const conversations = new ConversationRepository(ds);
  aliceConversation = (await conversations.create(OrgId('acme'), UserId('alice'), AgentId('helper')))!.id;
  bobConversation = (await conversations.create(OrgId('acme'), UserId('bob'), AgentId('helper')))!.id;

  ({ app, base } = await startGateway(60_000));
});

/** The attachments routes as the gateway serves them, with the hand-off kept `handoffTtlMs`. */
async function startGateway(handoffTtlMs: number): Promise<{ app: NestFastifyApplication; base: string }> {
  @Module({
    imports: [
      RedisModule.forRoot({ url: redisUrl }),
      DalModule.forRoot({ databaseUrl: db.url, databasePoolSize: 2 }),
      BlobStoreModule.forRoot({ blobStore: 'postgres', prefix }),
      QueueModule.forRoot({ prefix }),
      AttachmentsModule.forRoot({ maxBytes: MAX_BYTES, handoffTtlMs, catalogue: [] }),
    ],
    providers: [
      { provide: GATEWAY_CONFIG, useValue: { prefix, sessionTtlMs: 60_000 } },
      SessionService,
      Authenticator,
      { provide: APP_GUARD, useClass: AuthGuard },
      { provide: APP_FILTER, useClass: ApiErrorFilter },
    ],
  })
  class TestGateway {}
  // A JSON body limit far below the upload cap, as the gateway has: uploads answer to their own cap.
  const adapter = new FastifyAdapter({ bodyLimit: 1024 });
  const started = await NestFactory.create<NestFastifyApplication>(TestGateway, adapter, { logger: false });
  await started.register(fastifyMultipart);
  await started.listen(0, '127.0.0.1');
  return { app: started, base: await started.getUrl() };
}

afterAll(async () => {
  await app.close();
  await deleteRedisPrefix(redisUrl, prefix);
  await db.drop();
});

function form(
  file: { bytes: Buffer; name: string; type?: string } | null,
  fields: Record<string, string> = {},
  fieldsFirst = false,
) {
  const body = new FormData();
  const addFields = () => Object.entries(fields).forEach(([k, v]) => body.append(k, v));
  if (fieldsFirst) addFields();
  if (file)
    body.append(
      'file',
      new Blob([new Uint8Array(file.bytes)], { type: file.type ?? 'application/octet-stream' }),
      file.name,
    );
  if (!fieldsFirst) addFields();
  return body;
}

async function post(key: string | null, body: FormData | string) {
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  if (typeof body === 'string') headers['content-type'] = 'application/json';
  const res = await fetch(`${base}/v1/attachments`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as any };
}

async function get(key: string, id: string) {
  const res = await fetch(`${base}/v1/attachments/${id}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as any };
}

const png = () =>
  sharp({ create: { width: 8, height: 6, channels: 3, background: '#336699' } })
    .png()
    .toBuffer();

describe('POST /v1/attachments', () => {
  it('needs an API key', async () => {
    const res = await post(null, form({ bytes: Buffer.from('hello'), name: 'a.txt' }));
    expect(res).toEqual({
      status: 401,
      body: { error: { code: 'unauthorized', message: expect.any(String) } },
    });
  });

  it('stores the upload pending, decides its kind from the bytes and enqueues its ingest', async () => {
    const bytes = await png();
    const res = await post(ALICE, form({ bytes, name: 'report.pdf', type: 'application/pdf' }));
    expect(res).toEqual({
      status: 201,
      body: {
        id: expect.any(String),
        kind: 'picture',
        filename: 'report.pdf',
        mimeType: 'image/png',
        status: 'pending',
      },
    });
    const job = await app
      .get(BullMqClient)
      .queue(QueueName.Attachments)
      .getJob(`ingest-attachment:${res.body.id}:upload`);
    expect(job?.name).toBe('ingest-attachment');
    expect(job?.data).toEqual({ orgId: 'acme', attachmentId: res.body.id });
    const blobs = app.get<BlobStore>(BLOB_STORE);
    expect(await blobs.get({ orgId: OrgId('acme'), attachmentId: res.body.id, variant: 'original' })).toEqual(
      bytes,
    );
    // Handed off to the ingest worker too, under the org's key only.
    const handoff = app.get(UploadHandOff);
    expect(await handoff.take({ orgId: OrgId('acme'), attachmentId: res.body.id })).toEqual(bytes);
    expect(await handoff.take({ orgId: OrgId('globex'), attachmentId: res.body.id })).toBeNull();
  });

  it('takes the conversation from the field before or after the file', async () => {
    for (const fieldsFirst of [true, false]) {
      const body = form(
        { bytes: Buffer.from('# Ghi chú\n\nNội dung.'), name: 'notes.md' },
        { conversationId: aliceConversation },
        fieldsFirst,
      );
      const res = await post(ALICE, body);
      expect(res.body).toMatchObject({ kind: 'document', mimeType: 'text/markdown', filename: 'notes.md' });
      const [scope] = await new AttachmentRepository(db.dataSource).getScopes(OrgId('acme'), [res.body.id]);
      expect(scope).toEqual({ id: res.body.id, userId: 'alice', conversationId: aliceConversation });
    }
  });

  it("answers 404 for another user's, a missing or a malformed conversation, and keeps no bytes", async () => {
    const blobs = app.get<BlobStore>(BLOB_STORE);
    const handoff = app.get(UploadHandOff);
    const handedOff = jest.spyOn(handoff, 'put');
    const stored = jest.spyOn(blobs, 'put');
    try {
      for (const conversationId of [bobConversation, randomUUID(), 'nope']) {
        const res = await post(
          ALICE,
          form({ bytes: Buffer.from('text'), name: 'a.txt' }, { conversationId }),
        );
        expect(res).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
      }
      const keys = handedOff.mock.calls.map(([key]) => key);
      expect(keys).toHaveLength(3);
      for (const key of keys) {
        expect(await handoff.take(key)).toBeNull();
        expect(await blobs.get({ ...key, variant: 'original' })).toBeNull();
      }
      expect(stored).not.toHaveBeenCalled();
    } finally {
      handedOff.mockRestore();
      stored.mockRestore();
    }
  });

  it('refuses with 415 a file of no supported type, a text with a NUL byte and an empty file', async () => {
    const zip = Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0]);
    for (const bytes of [zip, Buffer.from('plain\0text'), Buffer.alloc(0)]) {
      const res = await post(ALICE, form({ bytes, name: 'file.txt', type: 'text/plain' }));
      expect(res).toMatchObject({ status: 415, body: { error: { code: 'unsupported_type' } } });
    }
  });

  it('refuses with 415 a text in a legacy 8-bit encoding, naming the encodings it takes', async () => {
    const latin1 = Buffer.from('Café crème, déjà vu', 'latin1');
    const windows1258 = Buffer.from([0x56, 0x69, 0xea, 0xf2, 0x74, 0x20, 0x4e, 0x61, 0x6d]); // "Việt Nam"
    for (const bytes of [latin1, windows1258]) {
      const res = await post(ALICE, form({ bytes, name: 'notes.txt', type: 'text/plain' }));
      expect(res).toMatchObject({
        status: 415,
        body: { error: { code: 'unsupported_type', message: expect.stringMatching(/UTF-8, or UTF-16/) } },
      });
    }
  });

  it('accepts a UTF-16 text with its byte order mark', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Tiếng Việt\nhello', 'utf16le')]);
    const res = await post(ALICE, form({ bytes: utf16, name: 'notes.txt', type: 'text/plain' }));
    expect(res).toMatchObject({ status: 201, body: { kind: 'document', mimeType: 'text/plain' } });
  });

  it('refuses with 413 a file over the size cap', async () => {
    const res = await post(ALICE, form({ bytes: Buffer.alloc(MAX_BYTES + 1, 'a'), name: 'big.txt' }));
    expect(res).toEqual({
      status: 413,
      body: {
        error: { code: 'too_large', message: `The file is larger than the limit of ${MAX_BYTES} bytes` },
      },
    });
    const atCap = await post(ALICE, form({ bytes: Buffer.alloc(MAX_BYTES, 'a'), name: 'cap.txt' }));
    expect(atCap.status).toBe(201);
  });

  it('records nothing of a file whose client goes mid-upload, and answers the next one', async () => {
    const uploads = jest.spyOn(app.get(AttachmentsService), 'upload');
    const created = jest.spyOn(app.get(AttachmentRepository), 'create');
    const handedOff = jest.spyOn(app.get(UploadHandOff), 'put');
    try {
      const boundary = `----gone-${randomUUID()}`;
      const req = request(`${base}/v1/attachments`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ALICE}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': 2 * MAX_BYTES,
        },
      });
      req.on('error', () => undefined); // the socket this test destroys
      req.write(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="half.txt"\r\n` +
          `content-type: text/plain\r\n\r\n${'a'.repeat(MAX_BYTES / 2)}`,
      );
      while (uploads.mock.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
      req.destroy();
      await expect(uploads.mock.results[0].value).rejects.toMatchObject({ code: 'validation_failed' });
      expect(created).not.toHaveBeenCalled();
      expect(handedOff).not.toHaveBeenCalled();
      const next = await post(ALICE, form({ bytes: Buffer.from('whole'), name: 'whole.txt' }));
      expect(next.status).toBe(201);
    } finally {
      uploads.mockRestore();
      created.mockRestore();
      handedOff.mockRestore();
    }
  });

  it('answers 400 without a file, or without multipart', async () => {
    expect(await post(ALICE, form(null, { conversationId: aliceConversation }))).toMatchObject({
      status: 400,
      body: { error: { code: 'validation_failed' } },
    });
    expect(await post(ALICE, JSON.stringify({ file: 'x' }))).toMatchObject({
      status: 400,
      body: { error: { code: 'validation_failed' } },
    });
  });
});

describe('POST /v1/attachments without the hand-off (UPLOAD_HANDOFF_TTL=0)', () => {
  it('stores the upload before its ingest is queued, and hands nothing off', async () => {
    const gateway = await startGateway(0);
    const queue = gateway.app.get(BullMqClient).queue(QueueName.Attachments);
    const blobs = gateway.app.get<BlobStore>(BLOB_STORE);
    const storedWhenQueued: (Buffer | null)[] = [];
    const add = queue.add.bind(queue);
    const watch = jest.spyOn(queue, 'add').mockImplementation(async (name, data, opts) => {
      const { orgId, attachmentId } = data as { orgId: string; attachmentId: string };
      storedWhenQueued.push(
        await blobs.get({
          orgId: OrgId(orgId),
          attachmentId: AttachmentId(attachmentId),
          variant: 'original',
        }),
      );
      return add(name, data, opts);
    });
    try {
      const bytes = Buffer.from('Stored first.');
      const res = await fetch(`${gateway.base}/v1/attachments`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ALICE}` },
        body: form({ bytes, name: 'first.txt' }),
      });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      expect(storedWhenQueued).toEqual([bytes]);
      expect(
        await gateway.app.get(UploadHandOff).take({ orgId: OrgId('acme'), attachmentId: AttachmentId(id) }),
      ).toBeNull();
    } finally {
      watch.mockRestore();
      await gateway.app.close();
    }
  });
});

describe('GET /v1/attachments/:id', () => {
  it('returns the manifest with its current status', async () => {
    const { body: created } = await post(ALICE, form({ bytes: Buffer.from('Xin chào'), name: 'hello.txt' }));
    await new AttachmentRepository(db.dataSource).update(OrgId('acme'), created.id, {
      status: 'reading',
      pageCount: 2,
      pagesRead: 1,
    });
    expect(await get(ALICE, created.id)).toEqual({
      status: 200,
      body: {
        id: created.id,
        kind: 'document',
        filename: 'hello.txt',
        mimeType: 'text/plain',
        status: 'reading',
        pagesRead: 1,
        pageCount: 2,
        unreadablePages: [],
        headings: [],
        chars: null,
        picture: null,
        error: null,
      },
    });
  });

  it("answers 404 for another org's, another user's, a missing or a malformed id", async () => {
    const { body: created } = await post(ALICE, form({ bytes: Buffer.from('mine'), name: 'mine.txt' }));
    for (const [key, id] of [
      [CAROL, created.id],
      [BOB, created.id],
      [ALICE, randomUUID()],
      [ALICE, 'not-an-id'],
    ]) {
      expect(await get(key, id)).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    }
  });
});
