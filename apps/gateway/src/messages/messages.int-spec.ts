import { ConversationId, OrgId, TurnId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { QueueName } from '@portal/contracts';
import {
  BlockRepository,
  PersonRequestRepository,
  SkillRepository,
  TraceRepository,
  TurnRepository,
} from '@portal/dal';
import {
  attachment,
  counts,
  job,
  newConversation,
  openSse,
  openTurn,
  pauseWithRequest,
  send,
  setStatus,
  startGateway,
  type Harness,
  type Who,
} from '../../test/gateway-harness.util';

let gw: Harness;
let skillIds: Record<string, string>;
beforeAll(async () => {
  gw = await startGateway();
  const skills = await new SkillRepository(gw.db.dataSource).findBySlugs(OrgId('acme'), [
    'fact-check',
    'style-guide',
    'draft',
    'secret',
    'retired',
  ]);
  skillIds = Object.fromEntries(skills.map((s) => [s.slug, s.id]));
});
afterAll(async () => {
  await gw?.close();
});

const turns = () => new TurnRepository(gw.db.dataSource);
const requests = (conversationId: string) =>
  new PersonRequestRepository(gw.db.dataSource).readBefore(OrgId('acme'), ConversationId(conversationId), {
    before: { turnN: 2 ** 31 - 1, seq: 0 },
    limit: 10,
  });

describe('a message that opens a turn', () => {
  it('records the queued turn, message and trace at once, enqueues it and publishes its events', async () => {
    const conversationId = await newConversation(gw);
    const sse = await openSse(gw, conversationId);
    const res = await send(gw, conversationId, { text: '/fact-check  compare these' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ turnId: expect.any(String), kind: 'turn' });
    const turnId = res.body.turnId;

    expect(await turns().get(OrgId('acme'), turnId)).toEqual({
      id: turnId,
      conversationId,
      n: 1,
      kind: 'turn',
      status: 'queued',
      effort: 'medium',
      model: 'seeing',
      contextTokens: null,
      selectedSkillIds: [skillIds['fact-check']],
      catalogueSkillIds: [skillIds['style-guide']],
      error: null,
    });
    const [message] = await new BlockRepository(gw.db.dataSource).listTurnMessages(OrgId('acme'), turnId);
    expect(message).toMatchObject({
      role: 'user',
      attachmentIds: [],
      blocks: [
        { seq: 1, kind: 'text', text: '/fact-check  compare these', narration: false, steering: false },
      ],
    });
    expect(await new TraceRepository(gw.db.dataSource).listForTurn(OrgId('acme'), turnId)).toEqual([
      { turnId, kind: 'SKILL_SELECT', skillIds: [skillIds['fact-check']], at: expect.any(Date) },
    ]);
    // The request a summary keeps: the text as the model reads it, without the skill's slug.
    expect(await requests(conversationId)).toEqual([
      { turnN: 1, seq: 1, messageId: message.id, text: 'compare these', tokens: expect.any(Number) },
    ]);
    expect(await job(gw, QueueName.Turns, `run-turn:${turnId}:open`)).toEqual({
      name: 'run-turn',
      data: { orgId: 'acme', turnId },
    });

    const events = (await sse.take(3)).map((e) => e.data);
    sse.close();
    expect(events).toEqual([
      { type: 'turn_started', turnId },
      { type: 'block_finished', turnId, block: message.blocks[0] },
      { type: 'turn_state', turnId, status: 'queued' },
    ]);
    const metrics = (await gw.call('GET', '/metrics', { as: null })).body as string;
    expect(metrics).toMatch(/portal_gateway_turns_opened_total\{kind="turn"\} [1-9]/);
  });

  it("takes the message's effort over the agent's, and numbers turns", async () => {
    const conversationId = await newConversation(gw);
    const first = await openTurn(gw, conversationId);
    await setStatus(gw, first, 'completed');
    const res = await send(gw, conversationId, { text: 'again', effort: 'high' });
    expect(await turns().get(OrgId('acme'), res.body.turnId)).toMatchObject({ n: 2, effort: 'high' });
  });

  it.each<[Who, string, string[]]>([
    ['alice', '/draft /fact-check /draft go', ['draft', 'fact-check']],
    ['dave', '/secret go', ['secret']],
  ])(
    'lets %s select visible active skills, published or not, in the order typed',
    async (who, text, slugs) => {
      const conversationId = await newConversation(gw, who);
      const res = await send(gw, conversationId, { text }, who);
      expect(res.status).toBe(202);
      const turn = await turns().get(OrgId('acme'), res.body.turnId);
      expect(turn!.selectedSkillIds).toEqual(slugs.map((s) => skillIds[s]));
    },
  );

  it('lets a skill be selected on an agent it is not bound to; the catalogue is the agent’s own', async () => {
    const conversationId = await newConversation(gw, 'alice', 'blind');
    const res = await send(gw, conversationId, { text: '/style-guide tidy this' });
    expect(await turns().get(OrgId('acme'), res.body.turnId)).toMatchObject({
      selectedSkillIds: [skillIds['style-guide']],
      catalogueSkillIds: [],
      model: 'blind',
      effort: 'low',
    });
  });

  it("snapshots the catalogue the caller sees: dave's private skill is in his", async () => {
    const conversationId = await newConversation(gw, 'dave');
    const res = await send(gw, conversationId, { text: 'hi' }, 'dave');
    const turn = await turns().get(OrgId('acme'), res.body.turnId);
    expect(turn!.catalogueSkillIds).toEqual([
      skillIds['fact-check'],
      skillIds['style-guide'],
      skillIds['secret'],
    ]);
  });

  it('accepts attachments of the caller, unbound or bound to the conversation, and stores them', async () => {
    const conversationId = await newConversation(gw);
    const doc = await attachment(gw);
    const picture = await attachment(gw, { kind: 'picture', conversationId });
    const res = await send(gw, conversationId, { text: 'look', attachmentIds: [doc, picture, doc] });
    expect(res.status).toBe(202);
    const [message] = await new BlockRepository(gw.db.dataSource).listTurnMessages(
      OrgId('acme'),
      res.body.turnId,
    );
    expect(message.attachmentIds).toEqual([doc, picture]);
  });
});

describe('the checks before a turn opens', () => {
  async function expectRefused(
    conversationId: string,
    body: { text: string; attachmentIds?: string[] },
    status: number,
    code: string,
    message?: RegExp,
    who: Who = 'alice',
  ) {
    const before = await counts(gw);
    const res = await send(gw, conversationId, body, who);
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    if (message) expect(res.body.error.message).toMatch(message);
    expect(await counts(gw)).toEqual(before);
  }

  it.each([
    ['a missing skill', '/nope do it', 'nope'],
    ['an inactive skill', '/retired do it', 'retired'],
    ["another user's private skill", '/secret do it', 'secret'],
    ["another org's skill", '/globex-only do it', 'globex-only'],
    ['one bad skill among good ones', '/fact-check /nope do it', 'nope'],
  ])('refuses %s with 422 skill_rejected naming the slug, recording nothing', async (_, text, slug) => {
    const conversationId = await newConversation(gw);
    await expectRefused(conversationId, { text }, 422, 'skill_rejected', new RegExp(`/${slug}\\b`));
  });

  it('refuses attachments that are not usable here with 422 attachment_not_found', async () => {
    const conversationId = await newConversation(gw);
    const elsewhere = await newConversation(gw);
    const cases = [
      randomUUID(),
      'not-a-uuid',
      await attachment(gw, { userId: 'bob' }),
      await attachment(gw, { conversationId: elsewhere }),
      await attachment(gw, { orgId: 'globex', userId: 'mallory' }),
    ];
    for (const id of cases) {
      await expectRefused(conversationId, { text: 'see', attachmentIds: [id] }, 422, 'attachment_not_found');
    }
  });

  it('refuses a picture for a model that cannot see with 422 model_cannot_see naming the model', async () => {
    const conversationId = await newConversation(gw, 'alice', 'blind');
    const picture = await attachment(gw, { kind: 'picture' });
    await expectRefused(
      conversationId,
      { text: 'see', attachmentIds: [picture] },
      422,
      'model_cannot_see',
      /blind/,
    );
    const doc = await attachment(gw);
    expect((await send(gw, conversationId, { text: 'read', attachmentIds: [doc] })).status).toBe(202);
  });

  it('runs the checks in the order of the spec', async () => {
    const conversationId = await newConversation(gw, 'alice', 'blind');
    const picture = await attachment(gw, { kind: 'picture' });
    await expectRefused(
      conversationId,
      { text: '/nope x', attachmentIds: [randomUUID()] },
      422,
      'skill_rejected',
    );
    await expectRefused(
      conversationId,
      { text: 'x', attachmentIds: [picture, randomUUID()] },
      422,
      'attachment_not_found',
    );
  });

  it('validates the body, naming the field', async () => {
    const conversationId = await newConversation(gw);
    for (const [body, field] of [
      [{}, 'text'],
      [{ text: '' }, 'text'],
      [{ text: 'x', effort: 'max' }, 'effort'],
      [{ text: 'x', attachmentIds: 'a' }, 'attachmentIds'],
    ] as const) {
      const res = await gw.call('POST', `/v1/conversations/${conversationId}/messages`, { body });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(new RegExp(`^${field}: `));
    }
  });
});

describe('a message while a turn is open', () => {
  it.each(['queued', 'running'] as const)(
    'steers a %s turn: a new user message with a steering block',
    async (status) => {
      const conversationId = await newConversation(gw);
      const turnId = await openTurn(gw, conversationId, 'first');
      await setStatus(gw, turnId, status);
      const sse = await openSse(gw, conversationId);
      const before = await counts(gw);

      const res = await send(gw, conversationId, { text: '/fact-check also check the dates' });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ turnId, steered: true });
      const messages = await new BlockRepository(gw.db.dataSource).listTurnMessages(
        OrgId('acme'),
        TurnId(turnId),
      );
      expect(messages.map((m) => m.role)).toEqual(['user', 'user']);
      const steering = messages[1].blocks[0];
      expect(steering).toMatchObject({
        seq: 2,
        kind: 'text',
        text: '/fact-check also check the dates',
        steering: true,
        narration: false,
      });
      expect(await counts(gw)).toEqual({
        ...before,
        messages: before.messages + 1,
        blocks: before.blocks + 1,
      });
      // Steering is a request as typed, slugs and all: the model read it so.
      expect((await requests(conversationId)).map((r) => [r.turnN, r.seq, r.text])).toEqual([
        [1, 1, 'first'],
        [1, 2, '/fact-check also check the dates'],
      ]);
      expect((await sse.next()).data).toEqual({ type: 'block_finished', turnId, block: steering });
      sse.close();
      expect((await turns().get(OrgId('acme'), TurnId(turnId)))!.status).toBe(status);
    },
  );

  /**
   * Sends `text` while this test holds the turn row's lock: once the request waits for the lock,
   * `change` runs in the holding transaction, which then commits and lets the request go on.
   */
  async function sendWhileLocked(
    conversationId: string,
    turnId: string,
    text: string,
    change: (em: EntityManager) => Promise<unknown>,
  ) {
    const holder = gw.db.dataSource.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await new TurnRepository(holder.manager).lockForUpdate(OrgId('acme'), TurnId(turnId));
      let answered = false;
      const response = send(gw, conversationId, { text }).finally(() => (answered = true));
      const waiting = `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      while (!answered && (await gw.db.dataSource.query(waiting))[0].n === 0) {
        await new Promise((r) => setTimeout(r, 5));
      }
      await change(holder.manager);
      await holder.commitTransaction();
      return await response;
    } finally {
      await holder.release();
    }
  }

  it('does not steer a turn that paused between the read and the append: 409 turn_paused', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId, 'first');
    await setStatus(gw, turnId, 'running');

    const res = await sendWhileLocked(conversationId, turnId, 'also this', async (em) => {
      await new BlockRepository(em).append(OrgId('acme'), TurnId(turnId), [
        { kind: 'clarification_request', callId: 'c1', question: 'Which year?', options: [], answer: null },
      ]);
      await new TurnRepository(em).updateStatus(OrgId('acme'), TurnId(turnId), 'paused');
    });

    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('turn_paused');
    const messages = await new BlockRepository(gw.db.dataSource).listTurnMessages(
      OrgId('acme'),
      TurnId(turnId),
    );
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('does not steer a turn that settled between the read and the append: a new turn opens', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId, 'first');
    await setStatus(gw, turnId, 'running');

    const res = await sendWhileLocked(conversationId, turnId, 'next question', (em) =>
      new TurnRepository(em).updateStatus(OrgId('acme'), TurnId(turnId), 'completed'),
    );

    expect(res.status).toBe(202);
    expect(res.body).toEqual({ turnId: expect.any(String), kind: 'turn' });
    expect(res.body.turnId).not.toBe(turnId);
    expect(await turns().get(OrgId('acme'), res.body.turnId)).toMatchObject({ n: 2, status: 'queued' });
    const blocks = new BlockRepository(gw.db.dataSource);
    expect((await blocks.listTurnMessages(OrgId('acme'), TurnId(turnId))).map((m) => m.role)).toEqual([
      'user',
    ]);
    expect((await blocks.listTurnMessages(OrgId('acme'), res.body.turnId))[0].blocks).toEqual([
      expect.objectContaining({ text: 'next question', steering: false }),
    ]);
  });

  it('refuses a steering message the block rules forbid (SPEC 8): a 500, recording nothing', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId, 'first');
    // A running turn whose last block is a pending request: nothing may follow it (invariant 5).
    await pauseWithRequest(gw, turnId, 'clarification_request');
    await setStatus(gw, turnId, 'running');
    const before = await counts(gw);

    const res = await send(gw, conversationId, { text: 'also this' });
    // invariant_violated is a server fault, which the API answers as 500 `internal`, leaking nothing.
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('internal');
    expect(await counts(gw)).toEqual(before);
    const messages = await new BlockRepository(gw.db.dataSource).listTurnMessages(
      OrgId('acme'),
      TurnId(turnId),
    );
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('refuses a plain message while the turn is paused with 409 turn_paused, recording nothing', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId);
    await pauseWithRequest(gw, turnId, 'clarification_request');
    const before = await counts(gw);
    const res = await send(gw, conversationId, { text: 'hello?' });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('turn_paused');
    expect(await counts(gw)).toEqual(before);
  });
});

describe('/compact', () => {
  it('refuses when nothing has been written, while a turn is open, or with attachments', async () => {
    const conversationId = await newConversation(gw);
    const nothing = await send(gw, conversationId, { text: '/compact' });
    expect(nothing.status).toBe(409);
    expect(nothing.body.error).toEqual({
      code: 'compact_refused',
      message: expect.stringMatching(/nothing has been written/),
    });

    const turnId = await openTurn(gw, conversationId);
    for (const status of ['queued', 'running', 'paused'] as const) {
      await setStatus(gw, turnId, status);
      const before = await counts(gw);
      const open = await send(gw, conversationId, { text: '/compact keep figures' });
      expect(open.status).toBe(409);
      expect(open.body.error).toEqual({ code: 'compact_refused', message: expect.stringContaining(status) });
      expect(await counts(gw)).toEqual(before);
    }

    await setStatus(gw, turnId, 'completed');
    const doc = await attachment(gw);
    const withFile = await send(gw, conversationId, { text: '/compact', attachmentIds: [doc] });
    expect(withFile.status).toBe(409);
    expect(withFile.body.error.message).toMatch(/attachments/);
  });

  it('opens a compaction turn and enqueues its compact job; then refuses until more is written', async () => {
    const conversationId = await newConversation(gw);
    const first = await openTurn(gw, conversationId);
    await setStatus(gw, first, 'completed');
    const sse = await openSse(gw, conversationId);

    const res = await send(gw, conversationId, { text: '/compact keep every figure', effort: 'low' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ turnId: expect.any(String), kind: 'compaction' });
    const turnId = res.body.turnId;
    const events = (await sse.take(3)).map((e) => e.data);
    sse.close();
    expect(events).toEqual([
      { type: 'turn_started', turnId },
      {
        type: 'block_finished',
        turnId,
        block: expect.objectContaining({ text: '/compact keep every figure' }),
      },
      { type: 'turn_state', turnId, status: 'queued' },
    ]);
    expect(await turns().get(OrgId('acme'), turnId)).toMatchObject({
      kind: 'compaction',
      status: 'queued',
      n: 2,
      effort: 'low',
      model: 'seeing',
      selectedSkillIds: [],
    });
    expect(await job(gw, QueueName.Compactions, `compact:${turnId}:manual`)).toEqual({
      name: 'compact',
      data: { orgId: 'acme', turnId, trigger: 'MANUAL', requestId: 'manual' },
    });

    // The compaction worker writes the summary and settles the turn.
    const blocks = new BlockRepository(gw.db.dataSource);
    await blocks.append(OrgId('acme'), turnId, [
      {
        kind: 'compaction',
        summary: 'Summary of turns 1–1',
        trigger: 'MANUAL',
        coversTurns: { from: 1, to: 1 },
      },
      { kind: 'text', text: 'Context summarised: turns 1–1.', narration: false, steering: false },
    ]);
    await setStatus(gw, turnId, 'completed');
    const again = await send(gw, conversationId, { text: '/compact' });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toMatch(/nothing has been written/);

    const third = await openTurn(gw, conversationId, 'more');
    await setStatus(gw, third, 'failed');
    expect((await send(gw, conversationId, { text: '/compact' })).status).toBe(202);
  });
});
