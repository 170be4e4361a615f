import { AttachmentId, ConversationId, OrgId, TurnId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { conversationEventsKey } from '@portal/contracts';
import { BLOB_STORE, type BlobStore } from '@portal/application';
import { AttachmentRepository, BlockRepository, ToolResultRepository, UsageRepository } from '@portal/dal';
import {
  attachment,
  cancelListener,
  newConversation,
  openTurn,
  send,
  setStatus,
  startGateway,
  type Harness,
} from '../../test/gateway-harness.util';

/** Every table that holds a part of a conversation, and the column that names it, its turns or its attachments. */
const HOLDERS: Record<string, [column: string, by: 'conversation' | 'turns' | 'attachments']> = {
  turns: ['conversation_id', 'conversation'],
  messages: ['conversation_id', 'conversation'],
  blocks: ['conversation_id', 'conversation'],
  tool_results: ['conversation_id', 'conversation'],
  person_requests: ['conversation_id', 'conversation'],
  trace_entries: ['turn_id', 'turns'],
  usage_rows: ['turn_id', 'turns'],
  attachments: ['id', 'attachments'],
  attachment_pages: ['attachment_id', 'attachments'],
  attachment_blobs: ['attachment_id', 'attachments'],
};

/** The names of every file and directory under `root`. */
function filesUnder(root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true }).map((e) => e.name);
}

const VARIANTS = ['original', 'reduced-2048x768'] as const;

describe.each([
  ['postgres', () => 'postgres'],
  ['files', () => `file:${mkdtempSync(path.join(tmpdir(), 'portal-delete-blobs-'))}`],
])('DELETE /v1/conversations/:id with the %s blob store', (_kind, blobStoreValue) => {
  let gw: Harness;
  let blobs: BlobStore;
  let fileRoot: string | null = null;

  beforeAll(async () => {
    const value = blobStoreValue();
    fileRoot = value.startsWith('file:') ? value.slice('file:'.length) : null;
    gw = await startGateway({ env: { BLOB_STORE: value } });
    blobs = gw.app.get<BlobStore>(BLOB_STORE);
  });
  afterAll(async () => {
    await gw?.close();
    if (fileRoot) rmSync(fileRoot, { recursive: true, force: true });
  });

  async function countRows(conversationId: string, turnIds: string[], attachmentIds: string[]) {
    const counts: Record<string, number> = {};
    const ids = { conversation: [conversationId], turns: turnIds, attachments: attachmentIds };
    for (const [table, [column, by]] of Object.entries(HOLDERS)) {
      const [{ n }] = await gw.db.dataSource.query(
        `SELECT count(*)::int AS n FROM ${table} WHERE ${column} = ANY($1::uuid[])`,
        [ids[by]],
      );
      counts[table] = n;
    }
    return counts;
  }

  /** A picture (with a reduced copy) uploaded to the conversation and a document sent in it. */
  async function attachmentsOf(conversationId: string) {
    const picture = await attachment(gw, { kind: 'picture', conversationId });
    await blobs.put(
      { orgId: OrgId('acme'), attachmentId: AttachmentId(picture), variant: VARIANTS[1] },
      Buffer.from('small'),
    );
    const document = await attachment(gw, { kind: 'document' });
    await new AttachmentRepository(gw.db.dataSource).savePage(
      OrgId('acme'),
      AttachmentId(document),
      1,
      'Doanh thu quý 3',
    );
    return { picture, document };
  }

  it('cuts off the open turn, removes every row, byte and event of the conversation, then answers 404', async () => {
    const cancels = await cancelListener(gw);
    try {
      const id = await newConversation(gw);
      const { picture, document } = await attachmentsOf(id);
      // A document uploaded to no conversation and sent in this one and in another stays for the other.
      const shared = await attachment(gw, { kind: 'document' });
      const other = await newConversation(gw);
      const otherTurn = await openTurn(gw, other, 'keep me');
      await send(gw, other, { text: 'also here', attachmentIds: [shared] });

      const first = (
        await send(gw, id, { text: '/fact-check Q3', attachmentIds: [picture, document, shared] })
      ).body.turnId as string;
      await new ToolResultRepository(gw.db.dataSource).save(OrgId('acme'), {
        turnId: TurnId(first),
        callId: 'c1',
        content: 'r',
      });
      await new UsageRepository(gw.db.dataSource).add(OrgId('acme'), {
        turnId: TurnId(first),
        kind: 'turn',
        model: 'seeing',
        inputTokens: 10,
        outputTokens: 2,
        cachedTokens: 0,
        cost: 0.1,
      });
      const blocks = new BlockRepository(gw.db.dataSource);
      const reply = await blocks.addMessage(OrgId('acme'), TurnId(first), 'assistant');
      await blocks.append(
        OrgId('acme'),
        TurnId(first),
        [{ kind: 'text', text: 'Revenue rose.', narration: false, steering: false }],
        { messageId: reply!.id },
      );
      await setStatus(gw, first, 'completed');
      const running = await openTurn(gw, id, 'and Q4?');
      await setStatus(gw, running, 'running');

      const turnIds = [first, running];
      const attachmentIds = [picture, document];
      const before = await countRows(id, turnIds, attachmentIds);
      for (const table of Object.keys(HOLDERS)) {
        // A file store keeps the bytes as files (checked below), not in the table.
        const held = table === 'attachment_blobs' && fileRoot ? 0 : 1;
        expect({ table, held: Math.min(before[table], 1) }).toEqual({ table, held });
      }
      for (const attachmentId of attachmentIds) {
        for (const variant of VARIANTS.slice(0, attachmentId === picture ? 2 : 1)) {
          expect(
            await blobs.get({ orgId: OrgId('acme'), attachmentId: AttachmentId(attachmentId), variant }),
          ).not.toBeNull();
        }
      }
      if (fileRoot) expect(filesUnder(fileRoot)).toEqual(expect.arrayContaining(attachmentIds));
      const streamKey = conversationEventsKey(gw.prefix, ConversationId(id));
      expect(await gw.redis.exists(streamKey)).toBe(1);

      const res = await gw.call('DELETE', `/v1/conversations/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBe('');

      expect(await cancels.heard()).toEqual([running]);
      expect(await countRows(id, turnIds, attachmentIds)).toEqual(
        Object.fromEntries(Object.keys(HOLDERS).map((table) => [table, 0])),
      );
      for (const attachmentId of attachmentIds) {
        for (const variant of VARIANTS) {
          expect(
            await blobs.get({ orgId: OrgId('acme'), attachmentId: AttachmentId(attachmentId), variant }),
          ).toBeNull();
        }
      }
      if (fileRoot) {
        const left = filesUnder(fileRoot);
        for (const attachmentId of attachmentIds) expect(left).not.toContain(attachmentId);
      }
      expect(await gw.redis.exists(streamKey)).toBe(0);

      for (const [method, route] of [
        ['GET', `/v1/conversations/${id}`],
        ['GET', `/v1/conversations/${id}/messages`],
        ['DELETE', `/v1/conversations/${id}`],
        ['GET', `/v1/turns/${first}`],
        ['GET', `/v1/attachments/${picture}`],
      ]) {
        expect({ route, method, status: (await gw.call(method, route)).status }).toEqual({
          route,
          method,
          status: 404,
        });
      }
      expect((await gw.call('GET', '/v1/conversations')).body.map((c: { id: string }) => c.id)).not.toContain(
        id,
      );

      // The other conversation and the attachment it still carries are whole.
      expect((await gw.call('GET', `/v1/turns/${otherTurn}`)).status).toBe(200);
      expect((await gw.call('GET', `/v1/attachments/${shared}`)).status).toBe(200);
      expect(
        await blobs.get({ orgId: OrgId('acme'), attachmentId: AttachmentId(shared), variant: 'original' }),
      ).not.toBeNull();
      expect(await gw.redis.exists(conversationEventsKey(gw.prefix, ConversationId(other)))).toBe(1);
    } finally {
      await cancels.close();
    }
  });

  it("answers another user's, another org's and a missing conversation 404 and removes nothing", async () => {
    const id = await newConversation(gw, 'alice');
    const { picture } = await attachmentsOf(id);
    const turnId = await openTurn(gw, id);
    for (const as of ['bob', 'mallory'] as const) {
      const res = await gw.call('DELETE', `/v1/conversations/${id}`, { as });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    for (const missing of [randomUUID(), 'not-a-uuid']) {
      expect((await gw.call('DELETE', `/v1/conversations/${missing}`)).status).toBe(404);
    }
    expect((await gw.call('GET', `/v1/turns/${turnId}`)).body.status).toBe('queued');
    expect(
      await blobs.get({ orgId: OrgId('acme'), attachmentId: AttachmentId(picture), variant: VARIANTS[1] }),
    ).not.toBeNull();
    expect(await gw.redis.exists(conversationEventsKey(gw.prefix, ConversationId(id)))).toBe(1);
  });
});
