import { AttachmentId, OrgId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { BLOB_STORE, type BlobStore } from '@portal/application';
import { AttachmentRepository } from '@portal/dal';
import {
  attachment,
  KEYS,
  newConversation,
  startGateway,
  type Harness,
  type Who,
} from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const SECRET = 'GPS 48.8584 N 2.2945 E';

/** A finished picture of alice's, 3000 × 1000, whose original carries EXIF naming SECRET. */
async function picture(conversationId: string | null): Promise<string> {
  const id = await attachment(gw, { kind: 'picture', conversationId });
  const original = await sharp({ create: { width: 3000, height: 1000, channels: 3, background: '#c33' } })
    .jpeg()
    .withExif({ IFD0: { ImageDescription: SECRET } })
    .toBuffer();
  await gw.app
    .get<BlobStore>(BLOB_STORE)
    .put({ orgId: OrgId('acme'), attachmentId: AttachmentId(id), variant: 'original' }, original);
  await new AttachmentRepository(gw.db.dataSource).update(OrgId('acme'), AttachmentId(id), {
    status: 'finished',
    picture: { width: 2048, height: 683, originalWidth: 3000, originalHeight: 1000 },
  });
  // The helper records a PNG; this one is a JPEG, as detected from its bytes at upload.
  await gw.db.dataSource.query(`UPDATE attachments SET mime_type = 'image/jpeg' WHERE id = $1`, [id]);
  return id;
}

async function content(id: string, as: Who = 'alice') {
  const res = await fetch(`${gw.url}/v1/attachments/${id}/content`, {
    headers: { authorization: `Bearer ${KEYS[as]}` },
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

describe('GET /v1/attachments/:id/content', () => {
  it("answers the picture reduced to its agent's model's limits, without metadata, kept privately", async () => {
    const id = await picture(await newConversation(gw));
    const res = await content(id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/jpeg');
    expect(res.headers.get('cache-control')).toBe('private, max-age=86400');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const meta = await sharp(res.bytes).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height, exif: meta.exif }).toEqual({
      format: 'jpeg',
      width: 2048,
      height: 683,
      exif: undefined,
    });
    expect(res.bytes.includes(SECRET)).toBe(false);
  });

  it('answers a document, a picture not read yet and a picture whose bytes are gone 404, not cached', async () => {
    const conversationId = await newConversation(gw);
    const document = await attachment(gw, { kind: 'document', conversationId });
    const pending = await attachment(gw, { kind: 'picture', conversationId });
    const gone = await picture(conversationId);
    await gw.app
      .get<BlobStore>(BLOB_STORE)
      .removeAll({ orgId: OrgId('acme'), attachmentId: AttachmentId(gone) });
    for (const id of [document, pending, gone]) {
      const res = await content(id);
      expect(res.status).toBe(404);
      expect(res.headers.get('cache-control') ?? '').not.toMatch(/max-age/);
      expect(JSON.parse(res.bytes.toString()).error.code).toBe('not_found');
    }
  });

  it("answers another user's, another org's and a missing picture 404", async () => {
    const id = await picture(null);
    for (const as of ['bob', 'mallory'] as const) expect((await content(id, as)).status).toBe(404);
    expect((await content(randomUUID())).status).toBe(404);
    expect((await content('not-a-uuid')).status).toBe(404);
    expect((await content(id)).status).toBe(200);
  });
});
