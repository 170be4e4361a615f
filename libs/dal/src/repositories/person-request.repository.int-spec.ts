import { type CompactionBlock, ConversationId, OrgId, TurnId } from '@portal/domain';
import { personRequest } from '@portal/prompt';
import type { DataSource } from 'typeorm';
import { createScratchDatabase, type ScratchDatabase } from '../data-source';
import { answer, newConversation, seedOrg, settledTurn } from '../testing/dal.fixtures';
import { BlockRepository } from './block.repository';
import { PersonRequestRepository, type StoredRequest } from './person-request.repository';
import { TurnRepository } from './turn.repository';

const ORG = OrgId('acme');
const OTHER = OrgId('globex');

let db: ScratchDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'dal_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  await seedOrg(ds, ORG);
  await seedOrg(ds, OTHER);
});
afterAll(async () => {
  await db.drop();
});

const autoSummary = (to: number): Omit<CompactionBlock, 'id' | 'seq'> => ({
  kind: 'compaction',
  summary: `Summary of turns 1–${to}`,
  trigger: 'AUTO',
  coversTurns: { from: 1, to },
});

const said = (requests: StoredRequest[]) => requests.map((r) => [r.turnN, r.text]);

/** The rows stored for a conversation, oldest first. */
async function storedRows(conversationId: string) {
  return ds.query(
    `SELECT org_id AS "orgId", turn_n AS "turnN", seq, message_id AS "messageId", text, tokens
     FROM person_requests WHERE conversation_id = $1 ORDER BY turn_n, seq`,
    [conversationId],
  );
}

/** A steering message after the last block of `turnId`, written and recorded as the gateway does. */
async function steer(conversationId: string, turnId: string, turnN: number, typed: string) {
  const { message, blocks } = (await new BlockRepository(ds).append(
    ORG,
    TurnId(turnId),
    [{ kind: 'text', text: typed, narration: false, steering: true }],
    { into: 'user' },
  ))!;
  await new PersonRequestRepository(ds).record(ORG, {
    conversationId: ConversationId(conversationId),
    turnN,
    messageId: message.id,
    seq: blocks[0].seq,
    typed,
    steering: true,
  });
  return message.id;
}

describe('PersonRequestRepository: what is stored with each message of the person', () => {
  it('stores the opening message of a regular turn with its turn: leading slugs removed, tokens counted', async () => {
    const conversationId = await newConversation(ds, ORG);
    const opened = await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: conversationId,
      effort: 'low',
      model: 'm',
      text: '/summarise-report Tóm tắt báo cáo quý 3',
    });
    expect(await storedRows(conversationId)).toEqual([
      {
        orgId: ORG,
        turnN: 1,
        seq: 1,
        messageId: opened!.message.id,
        text: 'Tóm tắt báo cáo quý 3',
        tokens: personRequest('/summarise-report Tóm tắt báo cáo quý 3', false).tokens,
      },
    ]);
  });

  it('stores nothing for the message of a compaction turn', async () => {
    const conversationId = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, conversationId, { text: '/compact', kind: 'compaction' });
    expect(await storedRows(conversationId)).toEqual([]);
  });

  it('stores a steering message as typed, once', async () => {
    const conversationId = await newConversation(ds, ORG);
    const turn = await settledTurn(ds, ORG, conversationId, { text: 'first' });
    const messageId = await steer(conversationId, turn.id, 1, '/not-a-skill stop there');
    await new PersonRequestRepository(ds).record(ORG, {
      conversationId: conversationId,
      turnN: 1,
      messageId,
      seq: 2,
      typed: 'something else',
      steering: true,
    });
    expect((await storedRows(conversationId)).map((r: StoredRequest) => [r.seq, r.text])).toEqual([
      [1, 'first'],
      [2, '/not-a-skill stop there'],
    ]);
  });

  it('stores the requests of messages written without one from their text, as the writers would have', async () => {
    const conversationId = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, conversationId, { text: '/summarise-report please' });
    const turn = await settledTurn(ds, ORG, conversationId, { text: 'second' });
    await steer(conversationId, turn.id, 2, '/keep this as typed');
    await settledTurn(ds, ORG, conversationId, { text: '/compact', kind: 'compaction' });
    const written = await storedRows(conversationId);
    await ds.query(`DELETE FROM person_requests WHERE conversation_id = $1`, [conversationId]);

    const repo = new PersonRequestRepository(ds);
    expect(await repo.recordStored({ conversationId: conversationId })).toBe(3);
    expect(await storedRows(conversationId)).toEqual(written);
    expect(await repo.recordStored({ conversationId: conversationId })).toBe(0);
  });

  it('stores the requests of several orgs in one batch, each row with the org of its message', async () => {
    const ours = await newConversation(ds, ORG);
    const theirs = await newConversation(ds, OTHER);
    await settledTurn(ds, ORG, ours, { text: 'ours' });
    await settledTurn(ds, OTHER, theirs, { text: 'theirs' });
    await ds.query(`DELETE FROM person_requests WHERE conversation_id IN ($1, $2)`, [ours, theirs]);

    expect(await new PersonRequestRepository(ds).recordStored()).toBe(2);
    expect((await storedRows(ours)).map((r: { orgId: string; text: string }) => [r.orgId, r.text])).toEqual([
      [ORG, 'ours'],
    ]);
    expect((await storedRows(theirs)).map((r: { orgId: string; text: string }) => [r.orgId, r.text])).toEqual(
      [[OTHER, 'theirs']],
    );
  });
});

describe('PersonRequestRepository.readBefore', () => {
  let conversationId: string;

  // Turn 1; turn 2 with an AUTO summary, then a steering message after it; turn 3; turn 4 failed;
  // turn 5 running.
  beforeAll(async () => {
    conversationId = await newConversation(ds, ORG);
    await settledTurn(ds, ORG, ConversationId(conversationId), { text: 't1', blocks: [answer('a1')] });
    const two = await settledTurn(ds, ORG, ConversationId(conversationId), {
      text: 't2 before the summary',
      blocks: [autoSummary(2), answer('a2')],
    });
    await steer(conversationId, two.id, 2, 't2 steered after it');
    await settledTurn(ds, ORG, ConversationId(conversationId), { text: 't3', blocks: [answer('a3')] });
    await settledTurn(ds, ORG, ConversationId(conversationId), { text: 't4', status: 'failed' });
    await new TurnRepository(ds).createWithUserMessage(ORG, {
      conversationId: ConversationId(conversationId),
      effort: 'low',
      model: 'm',
      text: 't5',
    });
  });

  it("returns the person's requests before the position, oldest first, and only them", async () => {
    const read = await new PersonRequestRepository(ds).readBefore(ORG, ConversationId(conversationId), {
      before: { turnN: 4, seq: 0 },
      limit: 10,
    });
    expect(said(read)).toEqual([
      [1, 't1'],
      [2, 't2 before the summary'],
      [2, 't2 steered after it'],
      [3, 't3'],
    ]);
    expect(read[2].tokens).toBe(personRequest('t2 steered after it', true).tokens);
  });

  it('reads backwards in pages of `limit` requests, the next one before the oldest read', async () => {
    const repo = new PersonRequestRepository(ds);
    const page = (before: { turnN: number; seq: number }, limit: number) =>
      repo.readBefore(ORG, ConversationId(conversationId), { before, limit });
    const newest = await page({ turnN: 5, seq: 0 }, 2);
    expect(said(newest)).toEqual([
      [3, 't3'],
      [4, 't4'],
    ]);
    const next = await page(newest[0], 2);
    expect(said(next)).toEqual([
      [2, 't2 before the summary'],
      [2, 't2 steered after it'],
    ]);
    expect(said(await page(next[0], 2))).toEqual([[1, 't1']]);
  });

  it('reads nothing of another org', async () => {
    const repo = new PersonRequestRepository(ds);
    const before = { turnN: 5, seq: 0 };
    expect(await repo.readBefore(OTHER, ConversationId(conversationId), { before, limit: 10 })).toEqual([]);
    expect(await repo.readBefore(ORG, ConversationId('not-a-uuid'), { before, limit: 10 })).toEqual([]);
  });
});
