import { createHash, randomUUID } from 'node:crypto';
import {
  AgentId,
  AttachmentId,
  type Block,
  ConversationId,
  OrgId,
  type TextBlock,
  TurnId,
  UserId,
} from '@portal/domain';
import type { DataSource } from 'typeorm';
import { AgentRepository } from './repositories/agent.repository';
import { AttachmentRepository } from './repositories/attachment.repository';
import { BlockRepository, placeBlocks } from './repositories/block.repository';
import { CallInputRepository } from './repositories/call-input.repository';
import type { NewBlock } from './mappers/block.mapper';
import { ConversationRepository } from './repositories/conversation.repository';
import { OrgRepository } from './repositories/org.repository';
import { SkillRepository } from './repositories/skill.repository';
import { ToolResultRepository } from './repositories/tool-result.repository';
import { TraceRepository } from './repositories/trace.repository';
import { TurnLeaseRepository } from './repositories/turn-lease.repository';
import { TurnRepository } from './repositories/turn.repository';
import { UsageRepository } from './repositories/usage.repository';
import { UserRepository } from './repositories/user.repository';
import { answer, newConversation, seedOrg, settledTurn } from './testing/dal.fixtures';
import { createScratchDatabase, type ScratchDatabase } from './data-source';

const ACME = OrgId('acme');
const GLOBEX = OrgId('globex');

let db: ScratchDatabase;
let ds: DataSource;

beforeAll(async () => {
  db = await createScratchDatabase({ label: 'dal_test', serverUrl: process.env['DATABASE_URL'] });
  ds = db.dataSource;
  await seedOrg(ds, ACME);
  await seedOrg(ds, GLOBEX);
});
afterAll(async () => {
  await db.drop();
});

async function openTurn(orgId = ACME, conversationId?: string) {
  const id = conversationId ?? (await newConversation(ds, orgId));
  const created = await new TurnRepository(ds).createWithUserMessage(orgId, {
    conversationId: ConversationId(id),
    effort: 'high',
    model: 'gpt-test',
    text: '/fact-check find Q3',
    attachmentIds: [],
  });
  return created!;
}

describe('OrgRepository', () => {
  it('upserts idempotently and reads only the org asked for', async () => {
    const orgs = new OrgRepository(ds);
    await orgs.upsert(OrgId('initech'), 'Initech');
    await orgs.upsert(OrgId('initech'), 'Initech Ltd');
    expect(await orgs.get(OrgId('initech'))).toEqual({ id: 'initech', name: 'Initech Ltd' });
    expect(await orgs.get(OrgId('nope'))).toBeNull();
  });
});

describe('UserRepository', () => {
  const users = () => new UserRepository(ds);

  it('keys users by (org, id)', async () => {
    await users().upsert(GLOBEX, UserId('carol'), 'admin');
    await users().upsert(GLOBEX, UserId('carol'), 'author');
    expect(await users().get(GLOBEX, UserId('carol'))).toEqual({
      orgId: GLOBEX,
      id: 'carol',
      role: 'author',
    });
    expect(await users().get(ACME, UserId('carol'))).toBeNull();
    expect(await users().get(ACME, UserId('alice'))).toEqual({ orgId: ACME, id: 'alice', role: 'author' });
  });

  it('stores API keys as sha256 only and authenticates by them', async () => {
    const key = 'pk_alice_0123456789';
    await users().addApiKey(ACME, UserId('alice'), key);
    await users().addApiKey(ACME, UserId('alice'), key);
    const rows: Record<string, unknown>[] = await ds.query(`SELECT * FROM api_keys`);
    expect(rows).toHaveLength(1);
    expect(rows[0]['key_hash']).toBe(createHash('sha256').update(key).digest('hex'));
    expect(JSON.stringify(rows)).not.toContain(key);
    expect(await users().findByApiKey(key)).toEqual({ orgId: ACME, id: 'alice', role: 'author' });
    expect(await users().findByApiKey('pk_unknown')).toBeNull();
  });

  it('refuses a key that another user holds', async () => {
    await users().addApiKey(ACME, UserId('bob'), 'pk_bob');
    await expect(users().addApiKey(GLOBEX, UserId('alice'), 'pk_bob')).rejects.toMatchObject({
      code: 'api_key_taken',
    });
    expect(await users().findByApiKey('pk_bob')).toMatchObject({ orgId: ACME, id: 'bob' });
  });
});

describe('AgentRepository and SkillRepository', () => {
  const agents = () => new AgentRepository(ds);
  const skills = () => new SkillRepository(ds);
  const base = {
    description: 'One sentence.',
    instructions: '# Do it',
    status: 'active' as const,
    published: true,
  };

  it('upserts agents and keeps each org to its own', async () => {
    await agents().upsert(ACME, {
      id: AgentId('writer'),
      name: 'Writer',
      instructions: 'Write.',
      model: 'gpt-test',
      effort: 'high',
      tools: [
        {
          name: 'lookup',
          description: 'd',
          parameters: { type: 'object' },
          url: 'http://x',
          requiresApproval: true,
        },
      ],
      reviewer: 'gpt-review',
      compactionGuidance: 'Keep figures.',
    });
    expect(await agents().get(ACME, AgentId('writer'))).toMatchObject({
      effort: 'high',
      reviewer: 'gpt-review',
      tools: [{ name: 'lookup', requiresApproval: true }],
    });
    expect(await agents().get(GLOBEX, AgentId('writer'))).toBeNull();
    expect((await agents().list(ACME)).map((a) => a.id)).toEqual(['researcher', 'writer']);
    expect((await agents().list(GLOBEX)).map((a) => a.id)).toEqual(['researcher']);
  });

  it('upserts skills by slug, keeping the id', async () => {
    const first = await skills().upsert(ACME, {
      ...base,
      slug: 'fact-check',
      name: 'Fact check',
      visibility: 'org',
      ownerId: 'alice',
    });
    const again = await skills().upsert(ACME, {
      ...base,
      slug: 'fact-check',
      name: 'Fact checking',
      visibility: 'org',
      ownerId: 'alice',
    });
    expect(again.id).toBe(first.id);
    expect(await skills().get(ACME, first.id)).toMatchObject({ name: 'Fact checking', slug: 'fact-check' });
    expect(await skills().get(GLOBEX, first.id)).toBeNull();
    expect(await skills().get(ACME, 'not-a-uuid')).toBeNull();
    expect(await skills().getMany(GLOBEX, [first.id])).toEqual([]);
    expect(await skills().findBySlugs(GLOBEX, ['fact-check'])).toEqual([]);
    expect(await skills().update(GLOBEX, first.id, { name: 'x' })).toBeNull();
    expect((await skills().update(ACME, first.id, { status: 'inactive' }))?.status).toBe('inactive');
    await skills().update(ACME, first.id, { status: 'active' });
  });

  it('rejects a malformed slug', async () => {
    await expect(
      skills().upsert(ACME, { ...base, slug: 'Bad Slug', name: 'x', visibility: 'org', ownerId: null }),
    ).rejects.toThrow();
  });

  it('lists what a user can see and the agent catalogue', async () => {
    const mine = await skills().upsert(ACME, {
      ...base,
      slug: 'alice-draft',
      name: 'Draft',
      visibility: 'private',
      ownerId: 'alice',
    });
    const off = await skills().upsert(ACME, {
      ...base,
      slug: 'retired',
      name: 'Retired',
      visibility: 'org',
      ownerId: null,
      status: 'inactive',
    });
    const unpublished = await skills().upsert(ACME, {
      ...base,
      slug: 'wip',
      name: 'WIP',
      visibility: 'org',
      ownerId: null,
      published: false,
    });
    const [fact] = await skills().findBySlugs(ACME, ['fact-check']);
    const theirs = await skills().upsert(GLOBEX, {
      ...base,
      slug: 'globex-only',
      name: 'G',
      visibility: 'org',
      ownerId: null,
    });

    expect((await skills().listVisible(ACME, UserId('alice'))).map((s) => s.slug)).toEqual([
      'alice-draft',
      'fact-check',
      'retired',
      'wip',
    ]);
    expect((await skills().listVisible(ACME, UserId('bob'))).map((s) => s.slug)).toEqual([
      'fact-check',
      'retired',
      'wip',
    ]);
    expect((await skills().listVisible(GLOBEX, UserId('alice'))).map((s) => s.slug)).toEqual(['globex-only']);

    await agents().setSkills(ACME, AgentId('researcher'), [
      mine.id,
      off.id,
      unpublished.id,
      fact.id,
      theirs.id,
    ]);
    expect(await agents().listSkillIds(ACME, AgentId('researcher'))).toEqual([
      mine.id,
      off.id,
      unpublished.id,
      fact.id,
    ]);
    expect(await agents().listSkillIds(GLOBEX, AgentId('researcher'))).toEqual([]);
    expect(
      (await skills().listCatalogue(ACME, UserId('alice'), AgentId('researcher'))).map((s) => s.slug),
    ).toEqual(['alice-draft', 'fact-check']);
    expect(
      (await skills().listCatalogue(ACME, UserId('bob'), AgentId('researcher'))).map((s) => s.slug),
    ).toEqual(['fact-check']);
    expect(await skills().listCatalogue(GLOBEX, UserId('alice'), AgentId('researcher'))).toEqual([]);
  });
});

describe('ConversationRepository', () => {
  const conversations = () => new ConversationRepository(ds);

  it('creates only with an agent of the org', async () => {
    expect(await conversations().create(ACME, UserId('alice'), AgentId('writer'))).not.toBeNull();
    expect(await conversations().create(GLOBEX, UserId('alice'), AgentId('writer'))).toBeNull();
  });

  it('reads a conversation for its user and org only', async () => {
    const id = await newConversation(ds, ACME, UserId('alice'));
    expect(await conversations().getForUser(ACME, UserId('alice'), id)).toMatchObject({
      id,
      agentId: 'researcher',
      title: null,
    });
    expect(await conversations().getForUser(ACME, UserId('bob'), id)).toBeNull();
    expect(await conversations().getForUser(GLOBEX, UserId('alice'), id)).toBeNull();
    expect(await conversations().get(GLOBEX, id)).toBeNull();
    expect(await conversations().get(ACME, ConversationId('nope'))).toBeNull();
    await conversations().nameIfUntitled(GLOBEX, id, 'stolen');
    await conversations().nameIfUntitled(ACME, id, 'Q3 revenue');
    expect((await conversations().get(ACME, id))?.title).toBe('Q3 revenue');
    await conversations().nameIfUntitled(ACME, id, 'Generated later');
    expect((await conversations().get(ACME, id))?.title).toBe('Q3 revenue');
  });

  it('renames only the owner’s conversation', async () => {
    const id = await newConversation(ds, ACME, UserId('alice'));
    expect(await conversations().rename(ACME, UserId('bob'), id, 'Not mine')).toBe(false);
    expect(await conversations().rename(GLOBEX, UserId('alice'), id, 'Not ours')).toBe(false);
    expect(await conversations().rename(ACME, UserId('alice'), ConversationId('nope'), 'Bad id')).toBe(false);
    expect(await conversations().rename(ACME, UserId('alice'), id, 'Mine')).toBe(true);
    expect((await conversations().get(ACME, id))?.title).toBe('Mine');
  });

  it('lists the user’s conversations, most recently updated first', async () => {
    const older = await newConversation(ds, ACME, UserId('bob'));
    const newer = await newConversation(ds, ACME, UserId('bob'));
    expect((await conversations().listForUser(ACME, UserId('bob'))).map((c) => c.id)).toEqual([newer, older]);
    await openTurn(ACME, older);
    expect((await conversations().listForUser(ACME, UserId('bob'))).map((c) => c.id)).toEqual([older, newer]);
    expect(await conversations().listForUser(GLOBEX, UserId('bob'))).toEqual([]);
  });
});

describe('TurnRepository', () => {
  const turns = () => new TurnRepository(ds);
  const leases = () => new TurnLeaseRepository(ds);

  it('opens a queued turn with the user message in one go', async () => {
    const { turn, message } = await openTurn();
    expect(turn).toMatchObject({
      n: 1,
      kind: 'turn',
      status: 'queued',
      effort: 'high',
      contextTokens: null,
      error: null,
    });
    expect(await turns().get(ACME, turn.id)).toEqual(turn);
    expect(message).toMatchObject({ turnId: turn.id, role: 'user', attachmentIds: [] });
    expect(await new BlockRepository(ds).listTurnMessages(ACME, turn.id)).toEqual([message]);
  });

  it('allows one open turn per conversation and numbers turns 1, 2, 3', async () => {
    const conversationId = await newConversation(ds, ACME);
    const results = await Promise.allSettled([
      openTurn(ACME, conversationId),
      openTurn(ACME, conversationId),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({
      code: 'turn_active',
    });
    const first = (await turns().getActive(ACME, conversationId))!;
    expect(first.n).toBe(1);
    await turns().updateStatus(ACME, first.id, 'completed');
    const second = await openTurn(ACME, conversationId);
    expect(second.turn.n).toBe(2);
    expect((await turns().getLatest(ACME, conversationId))?.id).toBe(second.turn.id);
    expect((await turns().listForConversation(ACME, conversationId)).map((t) => t.n)).toEqual([1, 2]);
  });

  it('changes status, guarded by the expected current status', async () => {
    const { turn } = await openTurn();
    expect(await turns().updateStatus(ACME, turn.id, 'completed', { from: ['running'] })).toBeNull();
    expect(await turns().updateStatus(ACME, turn.id, 'running', { from: ['queued'] })).toMatchObject({
      status: 'running',
    });
    expect(await turns().updateStatus(ACME, turn.id, 'failed', { error: 'blocked_by_review' })).toMatchObject(
      {
        status: 'failed',
        error: 'blocked_by_review',
      },
    );
  });

  it('records context tokens and leases', async () => {
    const { turn } = await openTurn();
    await turns().setContextTokens(ACME, turn.id, 1234);
    expect((await turns().get(ACME, turn.id))?.contextTokens).toBe(1234);
    expect(await leases().claim(ACME, turn.id, 'worker-1', 60_000)).toMatchObject({
      turn: { status: 'running' },
      from: 'queued',
    });
    expect(await leases().claim(ACME, turn.id, 'worker-2', 60_000)).toBeNull();
    expect(await leases().renewLease(ACME, turn.id, 'worker-1', 60_000)).toBe(true);
    expect(await leases().renewLease(ACME, turn.id, 'worker-2', 60_000)).toBe(false);
    await ds.query(`UPDATE turns SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [
      turn.id,
    ]);
    expect(await leases().claim(ACME, turn.id, 'worker-2', 60_000)).toMatchObject({
      turn: { status: 'running' },
      from: 'running',
    });
    expect(await leases().claim(ACME, turn.id, 'worker-3', 60_000, { kind: 'compaction' })).toBeNull();
    const [{ attempt }] = await ds.query(`SELECT attempt FROM turns WHERE id = $1`, [turn.id]);
    expect(attempt).toBe(2);
  });

  it('reads and writes nothing across orgs', async () => {
    const { turn } = await openTurn();
    expect(await turns().get(GLOBEX, turn.id)).toBeNull();
    expect(await turns().listForConversation(GLOBEX, turn.conversationId)).toEqual([]);
    expect(await turns().getLatest(GLOBEX, turn.conversationId)).toBeNull();
    expect(await turns().getActive(GLOBEX, turn.conversationId)).toBeNull();
    expect(await turns().updateStatus(GLOBEX, turn.id, 'cut_off')).toBeNull();
    expect(await leases().claim(GLOBEX, turn.id, 'w', 1000)).toBeNull();
    await turns().setContextTokens(GLOBEX, turn.id, 99);
    expect(await turns().get(ACME, turn.id)).toMatchObject({ status: 'queued', contextTokens: null });
    expect(
      await turns().createWithUserMessage(GLOBEX, {
        conversationId: turn.conversationId,
        effort: 'low',
        model: 'm',
        text: 'x',
      }),
    ).toBeNull();
  });
});

type OpenedTurn = Awaited<ReturnType<TurnRepository['createForPerson']>>;

describe("TurnRepository.createForPerson: a person's turn on its agent's terms", () => {
  const turns = () => new TurnRepository(ds);
  const alice = UserId('alice');

  it("takes the agent's model, the message's effort or else the agent's, and the catalogue the person sees less the selected skills", async () => {
    const agents = new AgentRepository(ds);
    const skills = new SkillRepository(ds);
    await agents.upsert(ACME, {
      id: AgentId('planner'),
      name: 'Planner',
      instructions: 'Plan.',
      model: 'gpt-plan',
      effort: 'low',
      tools: [],
      reviewer: null,
      compactionGuidance: null,
    });
    const skill = (slug: string, over: Partial<Parameters<SkillRepository['upsert']>[1]> = {}) =>
      skills.upsert(ACME, {
        slug,
        name: slug,
        description: 'One sentence.',
        instructions: '# Do it',
        visibility: 'org',
        ownerId: null,
        status: 'active',
        published: true,
        ...over,
      });
    const picked = await skill('plan-picked');
    const bobs = await skill('plan-bobs', { visibility: 'private', ownerId: 'bob' });
    const retired = await skill('plan-retired', { status: 'inactive' });
    const shared = await skill('plan-shared');
    await agents.setSkills(ACME, AgentId('planner'), [picked.id, bobs.id, retired.id, shared.id]);
    const conversation = await new ConversationRepository(ds).create(ACME, alice, AgentId('planner'));

    const first = (await turns().createForPerson(ACME, alice, {
      conversationId: conversation!.id,
      text: '/plan-picked go',
      selectedSkillIds: [picked.id],
    }))!;
    expect(first.turn).toMatchObject({
      n: 1,
      kind: 'turn',
      status: 'queued',
      model: 'gpt-plan',
      effort: 'low',
      selectedSkillIds: [picked.id],
      catalogueSkillIds: [shared.id],
    });
    expect(await turns().get(ACME, first.turn.id)).toEqual(first.turn);
    expect(await new BlockRepository(ds).listTurnMessages(ACME, first.turn.id)).toEqual([first.message]);

    await turns().updateStatus(ACME, first.turn.id, 'completed');
    const second = (await turns().createForPerson(ACME, alice, {
      conversationId: conversation!.id,
      text: 'again',
      effort: 'high',
    }))!;
    // In the agent's order of its skills.
    expect(second.turn).toMatchObject({ n: 2, effort: 'high', catalogueSkillIds: [picked.id, shared.id] });
  });

  it("opens nothing in another user's or another org's conversation, or after a later turn than asked", async () => {
    const conversationId = await newConversation(ds, ACME);
    const message = { conversationId, text: 'hello' };
    expect(await turns().createForPerson(ACME, UserId('bob'), message)).toBeNull();
    expect(await turns().createForPerson(GLOBEX, alice, message)).toBeNull();
    expect(await turns().listForConversation(ACME, conversationId)).toEqual([]);

    // Two at once: the conversation's one open turn goes to one of them.
    const results = await Promise.allSettled([
      turns().createForPerson(ACME, alice, message),
      turns().createForPerson(ACME, alice, message),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const opened = results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<OpenedTurn>;
    const { turn } = opened.value!;
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toMatchObject({
      code: 'turn_active',
    });
    // While it is open, another message opens nothing (it steers that turn instead).
    await expect(turns().createForPerson(ACME, alice, message)).rejects.toMatchObject({
      code: 'turn_active',
    });
    await turns().updateStatus(ACME, turn.id, 'failed');
    expect(await turns().createForPerson(ACME, alice, { ...message, afterTurnN: 0 })).toBeNull();
    expect((await turns().createForPerson(ACME, alice, { ...message, afterTurnN: 1 }))!.turn.n).toBe(2);
  });
});

describe('BlockRepository', () => {
  const blocks = () => new BlockRepository(ds);
  const use: NewBlock = { kind: 'tool_use', callId: 'c1', name: 'search', arguments: '{"query":"Q3"}' };
  const result: NewBlock = { kind: 'tool_result', callId: 'c1', outcome: 'ok', content: 'found', ref: null };
  const request: NewBlock = {
    kind: 'clarification_request',
    callId: 'c9',
    question: 'Which year?',
    options: ['2023', '2024'],
    answer: null,
  };
  const compaction = (summary: string, from: number): NewBlock =>
    ({ kind: 'compaction', summary, trigger: 'MANUAL', coversTurns: { from, to: 2 } }) as NewBlock;
  const steering = (t: string): NewBlock => ({ kind: 'text', text: t, narration: false, steering: true });

  it('appends after the last block into the assistant message, once per block id, and lists them in order', async () => {
    const { turn, message: userMessage } = await openTurn();
    const drafts = [use, result, answer('Q3 was $4.2M.')].map((d) => ({ ...d, id: randomUUID() }));
    const first = (await blocks().append(ACME, turn.id, drafts))!;
    expect(first.written).toBe(true);
    expect(first.blocks.map((b) => [b.seq, b.kind])).toEqual([
      [2, 'tool_use'],
      [3, 'tool_result'],
      [4, 'text'],
    ]);
    const again = (await blocks().append(ACME, turn.id, drafts))!;
    expect(again).toEqual({ ...first, written: false });
    const [{ n }] = await ds.query(`SELECT count(*)::int AS n FROM blocks WHERE turn_id = $1`, [turn.id]);
    expect(n).toBe(4);
    expect(await blocks().listTurnMessages(ACME, turn.id)).toEqual([userMessage, first.message]);
    expect(first.message).toMatchObject({ role: 'assistant', blocks: first.blocks });
  });

  it('refuses a position that another writer took in between', async () => {
    const { turn } = await openTurn();
    const assistant = (await blocks().addMessage(ACME, turn.id, 'assistant'))!;
    const { turn: locked, messages } = (await blocks().lockTurnMessages(ACME, turn.id))!;
    const mine = placeBlocks(locked, messages, assistant, [answer('a')]);
    const theirs = placeBlocks(locked, messages, assistant, [answer('b')]);
    expect(await blocks().appendBlocks(ACME, mine)).toEqual(mine.blocks);
    expect(await blocks().appendBlocks(ACME, mine)).toEqual(mine.blocks);
    await expect(blocks().appendBlocks(ACME, theirs)).rejects.toMatchObject({ code: 'block_conflict' });
  });

  it('appends a steering message after the last block, in a new user message', async () => {
    const { turn } = await openTurn();
    await blocks().append(ACME, turn.id, [
      { kind: 'text', text: 'working', narration: true, steering: false },
    ]);
    const added = (await blocks().append(ACME, turn.id, [steering('also Q4')], { into: 'user' }))!;
    expect(added.blocks[0]).toMatchObject({ seq: 3, steering: true });
    const messages = await blocks().listTurnMessages(ACME, turn.id);
    expect(messages.map((m) => [m.role, m.blocks.map((b) => b.seq)])).toEqual([
      ['user', [1]],
      ['assistant', [2]],
      ['user', [3]],
    ]);
  });

  // SPEC 8: the rules are checked on every append; a violation is an error and nothing is written.
  it.each<[string, NewBlock[], 'user' | 'assistant', string]>([
    ['a steering block of a non-text kind', [use], 'user', 'block_in_wrong_role'],
    ['steering text in an assistant message', [steering('stop')], 'assistant', 'block_in_wrong_role'],
    ['a compaction block with an empty summary', [compaction('  ', 1)], 'assistant', 'compaction_invalid'],
    [
      'a compaction block not covering from turn 1',
      [compaction('Summary of turns 2–2', 2)],
      'assistant',
      'compaction_invalid',
    ],
    ['a tool result without its tool use', [result], 'assistant', 'tool_result_without_use'],
    ['a block after a pending request', [request, answer('more')], 'assistant', 'request_not_last'],
  ])('refuses %s, writing nothing', async (_name, drafts, into, code) => {
    const { turn } = await openTurn();
    const before = await blocks().listTurnMessages(ACME, turn.id);
    const appending = blocks().append(ACME, turn.id, drafts, { into });
    await expect(appending).rejects.toMatchObject({
      code: 'invariant_violated',
      details: { violations: [expect.objectContaining({ code })] },
    });
    expect(await blocks().listTurnMessages(ACME, turn.id)).toEqual(before);
  });

  it('updates a block and finds it by id', async () => {
    const { turn } = await openTurn();
    const {
      blocks: [asked],
      message: assistant,
    } = (await blocks().append(ACME, turn.id, [request]))!;
    expect(await blocks().updateBlock(ACME, { ...asked, answer: '2024' } as Block)).toEqual({
      ...asked,
      answer: '2024',
    });
    expect(await blocks().getBlock(ACME, asked.id)).toEqual({
      turnId: turn.id,
      messageId: assistant.id,
      block: { ...asked, answer: '2024' },
    });
    expect(await blocks().updateBlock(GLOBEX, { ...asked, answer: 'x' } as Block)).toBeNull();
    expect(await blocks().getBlock(GLOBEX, asked.id)).toBeNull();
  });

  it('lists a conversation’s transcript in turn order', async () => {
    const conversationId = await newConversation(ds, ACME);
    await settledTurn(ds, ACME, conversationId, { text: 'one', blocks: [answer('1')] });
    await settledTurn(ds, ACME, conversationId, { text: 'two', blocks: [answer('2')] });
    const messages = await blocks().listConversationMessages(ACME, conversationId);
    expect(messages.map((m) => (m.blocks[0] as TextBlock).text)).toEqual(['one', '1', 'two', '2']);
    expect(await blocks().listConversationMessages(GLOBEX, conversationId)).toEqual([]);
  });

  it('reads and writes nothing across orgs', async () => {
    const { turn, message } = await openTurn();
    expect(await blocks().addMessage(GLOBEX, turn.id, 'assistant')).toBeNull();
    expect(await blocks().append(GLOBEX, turn.id, [answer('x')])).toBeNull();
    const placed = placeBlocks(turn, [message], message, [steering('x')]);
    await expect(blocks().appendBlocks(GLOBEX, placed)).rejects.toMatchObject({ code: 'not_found' });
    expect(await blocks().listTurnMessages(GLOBEX, turn.id)).toEqual([]);
    expect(await blocks().listTurnMessages(ACME, turn.id)).toEqual([message]);
  });
});

describe('TurnRepository.recordCallIfUnchanged: a settle without the lock taken first', () => {
  const turns = () => new TurnRepository(ds);
  const leases = () => new TurnLeaseRepository(ds);
  const blocks = () => new BlockRepository(ds);
  const steering = (t: string): NewBlock => ({ kind: 'text', text: t, narration: false, steering: true });

  /** A running turn held by `w-1`, read as a model call reads it, and its answer placed on that read. */
  async function heldAndRead() {
    const { turn } = await openTurn();
    const claimed = (await leases().claim(ACME, turn.id, 'w-1', 60_000, { callMessage: true }))!;
    const { turn: seen } = (await new CallInputRepository(ds).read(ACME, claimed.turn))!;
    const message = seen.messages.find((m) => m.id === claimed.callMessageId)!;
    const placed = placeBlocks(claimed.turn, seen.messages, message, [answer('Q3 is up.')]);
    const settle = () =>
      turns().recordCallIfUnchanged(
        ACME,
        turn.id,
        { owner: 'w-1', steeringCount: seen.steeringCount },
        { placed, status: { to: 'completed', from: ['running'], error: null } },
      );
    return { turn, placed, settle };
  }

  it('stores the blocks and settles the turn in one statement while it is as read', async () => {
    const { turn, placed, settle } = await heldAndRead();
    expect(await settle()).toEqual(placed.blocks);
    expect((await turns().get(ACME, turn.id))!.status).toBe('completed');
  });

  it.each([
    [
      'a steering message came',
      (turnId: string) => blocks().append(ACME, TurnId(turnId), [steering('and Q4')], { into: 'user' }),
    ],
    ['a cancel was asked for', (turnId: string) => turns().requestCancel(ACME, TurnId(turnId))],
    [
      'another worker took the turn',
      (turnId: string) => ds.query(`UPDATE turns SET lease_owner = 'w-2' WHERE id = $1`, [turnId]),
    ],
  ])('writes nothing once, since the read, %s', async (_case, change) => {
    const { turn, settle } = await heldAndRead();
    await change(turn.id);
    expect(await settle()).toBeNull();
    expect((await turns().get(ACME, turn.id))!.status).toBe('running');
    const stored = await blocks().listTurnMessages(ACME, turn.id);
    expect(stored.flatMap((m) => m.blocks).map((b) => (b as TextBlock).text)).not.toContain('Q3 is up.');
  });

  it('waits for a steering append in progress, then writes nothing', async () => {
    const { turn, settle } = await heldAndRead();
    const steeringTx = ds.createQueryRunner();
    await steeringTx.connect();
    await steeringTx.startTransaction();
    try {
      await new TurnRepository(steeringTx.manager).lockForUpdate(ACME, turn.id);
      await new BlockRepository(steeringTx.manager).addMessage(ACME, turn.id, 'user');
      const settling = settle();
      // The settle waits on the turn row's lock the steering transaction holds.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await steeringTx.commitTransaction();
      expect(await settling).toBeNull();
    } finally {
      await steeringTx.release();
    }
    expect((await turns().get(ACME, turn.id))!.status).toBe('running');
  });
});

describe('TurnLeaseRepository.claim with read: the first call reads what the claim read', () => {
  const leases = () => new TurnLeaseRepository(ds);
  const read = { turnsReplayed: 20 };

  it('returns the input a read right after the claim returns, the new call message last', async () => {
    const conversationId = await newConversation(ds, ACME);
    await settledTurn(ds, ACME, ConversationId(conversationId), { text: 'Q2?', blocks: [answer('Flat.')] });
    const { turn } = await openTurn(ACME, conversationId);
    const claimed = (await leases().claim(ACME, turn.id, 'w-1', 60_000, { callMessage: true, read }))!;
    expect(claimed.from).toBe('queued');
    expect(claimed.turn).toEqual(await new TurnRepository(ds).get(ACME, turn.id));
    const after = await new CallInputRepository(ds).read(ACME, claimed.turn, read);
    expect(claimed.input).toEqual(after);
    expect(claimed.input!.turn.messages.map((m) => [m.role, m.blocks.length])).toEqual([
      ['user', 1],
      ['assistant', 0],
    ]);
    expect(claimed.input!.turn.messages.at(-1)!.id).toBe(claimed.callMessageId);
    expect(claimed.input!.window.turns.map((t) => t.turn.n)).toEqual([1]);
    expect(claimed.input!.conversation.id).toBe(conversationId);
  });

  it('reads nothing for a turn taken over from a lapsed lease, or of another org', async () => {
    const { turn } = await openTurn();
    await leases().claim(ACME, turn.id, 'dead-worker', -1000, { callMessage: true, read });
    const taken = (await leases().claim(ACME, turn.id, 'w-2', 60_000, { callMessage: true, read }))!;
    expect(taken.from).toBe('running');
    expect(taken.input).toBeNull();
    expect(await leases().claim(GLOBEX, turn.id, 'w-3', 60_000, { callMessage: true, read })).toBeNull();
  });
});

describe('ToolResultRepository, UsageRepository, TraceRepository', () => {
  it('stores whole tool results under a ref, once per call', async () => {
    const { turn } = await openTurn();
    const results = new ToolResultRepository(ds);
    const saved = await results.save(ACME, { turnId: turn.id, callId: 'c1', content: 'x'.repeat(900) });
    expect(saved.ref).toMatch(/^tr_[0-9a-f]{16}$/);
    expect((await results.save(ACME, { turnId: turn.id, callId: 'c1', content: 'again' })).ref).toBe(
      saved.ref,
    );
    expect(await results.get(ACME, saved.ref)).toEqual({
      ...saved,
      conversationId: turn.conversationId,
      content: 'x'.repeat(900),
    });
    expect(await results.get(ACME, `ref:${saved.ref}`)).toEqual(saved);
    expect(await results.get(GLOBEX, saved.ref)).toBeNull();
    await expect(results.save(GLOBEX, { turnId: turn.id, callId: 'c2', content: 'x' })).rejects.toMatchObject(
      { code: 'not_found' },
    );
  });

  it('records usage rows, once per call key', async () => {
    const { turn } = await openTurn();
    const usage = new UsageRepository(ds);
    const row = {
      turnId: turn.id,
      kind: 'turn' as const,
      model: 'gpt-test',
      inputTokens: 1000,
      outputTokens: 50,
      cachedTokens: 200,
      cost: 0.00123,
    };
    expect(await usage.add(ACME, { ...row, callKey: 'call-1' })).toBe(true);
    expect(await usage.add(ACME, { ...row, callKey: 'call-1' })).toBe(false);
    expect(await usage.add(ACME, { ...row, kind: 'summary' })).toBe(true);
    expect(await usage.listForTurn(ACME, turn.id)).toEqual([row, { ...row, kind: 'summary' }]);
    expect(await usage.add(GLOBEX, row)).toBe(false);
    expect(await usage.listForTurn(GLOBEX, turn.id)).toEqual([]);
  });

  it("keeps a turn's selected skills in its one SKILL_SELECT entry, and none for a turn without", async () => {
    const trace = new TraceRepository(ds);
    const turns = new TurnRepository(ds);
    const skillIds = [randomUUID(), randomUUID()];
    const selecting = await turns.createWithUserMessage(ACME, {
      conversationId: await newConversation(ds, ACME),
      effort: 'low',
      model: 'gpt-test',
      text: '/a /b go',
      selectedSkillIds: skillIds,
    });
    const turnId = selecting!.turn.id;
    expect(await trace.listForTurn(ACME, turnId)).toEqual([
      { turnId, kind: 'SKILL_SELECT', skillIds, at: expect.any(Date) },
    ]);
    expect((await turns.get(ACME, turnId))!.selectedSkillIds).toEqual(skillIds);
    expect(await trace.listForTurn(GLOBEX, turnId)).toEqual([]);

    const { turn } = await openTurn();
    expect(await trace.listForTurn(ACME, turn.id)).toEqual([]);
    expect((await turns.get(ACME, turn.id))!.selectedSkillIds).toEqual([]);
  });
});

describe('AttachmentRepository', () => {
  const attachments = () => new AttachmentRepository(ds);
  const upload = (conversationId: ConversationId | null = null, userId = UserId('alice')) => ({
    id: randomUUID(),
    userId,
    conversationId,
    kind: 'document' as const,
    filename: 'report.pdf',
    mimeType: 'application/pdf',
    byteSize: 5,
    sha256: 'a'.repeat(64),
  });

  it('creates a pending attachment and reads its manifest', async () => {
    const conversationId = await newConversation(ds, ACME);
    const manifest = (await attachments().create(ACME, upload(conversationId)))!;
    expect(manifest).toEqual({
      id: manifest.id,
      kind: 'document',
      filename: 'report.pdf',
      mimeType: 'application/pdf',
      status: 'pending',
      pagesRead: 0,
      pageCount: null,
      unreadablePages: [],
      headings: [],
      chars: null,
      picture: null,
      error: null,
    });
    expect(await attachments().getScopes(ACME, [manifest.id])).toEqual([
      { id: manifest.id, userId: 'alice', conversationId },
    ]);
    expect(await attachments().create(ACME, upload(conversationId, UserId('bob')))).toBeNull();
    expect(await attachments().create(GLOBEX, upload(conversationId))).toBeNull();
  });

  it('tracks reading progress, pages and search', async () => {
    const { id } = (await attachments().create(ACME, upload()))!;
    await attachments().savePage(ACME, AttachmentId(id), 1, 'Introduction and scope');
    await attachments().savePage(ACME, AttachmentId(id), 2, 'Quarterly revenue for Q3 was 4.2 million');
    const updated = await attachments().update(ACME, AttachmentId(id), {
      status: 'finished',
      pagesRead: 2,
      pageCount: 2,
      unreadablePages: [3],
      headings: ['Introduction', 'Revenue'],
      chars: 62,
    });
    expect(updated).toMatchObject({
      status: 'finished',
      pagesRead: 2,
      unreadablePages: [3],
      headings: ['Introduction', 'Revenue'],
    });
    expect(await attachments().getPage(ACME, AttachmentId(id), 2)).toContain('Q3');
    expect(await attachments().search(ACME, [id], 'revenue Q3')).toEqual([
      {
        attachmentId: id,
        page: 2,
        rank: expect.any(Number),
        snippet: expect.stringContaining('<b>revenue</b>'),
      },
    ]);
  });

  it('reads and writes nothing across orgs', async () => {
    const { id } = (await attachments().create(ACME, upload()))!;
    await attachments().savePage(ACME, AttachmentId(id), 1, 'secret plans');
    expect(await attachments().getManifest(GLOBEX, AttachmentId(id))).toBeNull();
    expect(await attachments().getManifests(GLOBEX, [id])).toEqual([]);
    expect(await attachments().getManifests(ACME, [id, 'junk'])).toHaveLength(1);
    expect(await attachments().getScopes(GLOBEX, [id])).toEqual([]);
    expect(await attachments().update(GLOBEX, AttachmentId(id), { status: 'failed' })).toBeNull();
    expect(await attachments().getPage(GLOBEX, AttachmentId(id), 1)).toBeNull();
    expect(await attachments().search(GLOBEX, [id], 'secret')).toEqual([]);
    await attachments().savePage(GLOBEX, AttachmentId(id), 1, 'overwritten');
    expect(await attachments().getPage(ACME, AttachmentId(id), 1)).toBe('secret plans');
    expect((await attachments().getManifest(ACME, AttachmentId(id)))?.status).toBe('pending');
  });
});
