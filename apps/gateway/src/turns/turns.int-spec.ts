import { ConversationId, OrgId, TurnId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import { QueueName } from '@portal/contracts';
import { BlockRepository, SkillRepository, TurnRepository, UsageRepository } from '@portal/dal';
import {
  attachment,
  cancelListener,
  job,
  newConversation,
  openSse,
  openTurn,
  pauseWithRequest,
  send,
  setStatus,
  startGateway,
  type Harness,
} from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

const turns = () => new TurnRepository(gw.db.dataSource);
const blocks = () => new BlockRepository(gw.db.dataSource);

describe('GET /v1/turns/:id, usage and trace', () => {
  it('shows the turn, its usage rows and its SKILL_SELECT entry', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId, '/fact-check go');
    const [factCheck] = await new SkillRepository(gw.db.dataSource).findBySlugs(OrgId('acme'), [
      'fact-check',
    ]);

    const turn = await gw.call('GET', `/v1/turns/${turnId}`);
    expect(turn.status).toBe(200);
    expect(turn.body).toMatchObject({
      id: turnId,
      conversationId,
      n: 1,
      status: 'queued',
      effort: 'medium',
      model: 'seeing',
      contextTokens: null,
      selectedSkillIds: [factCheck.id],
      catalogueSkillIds: expect.any(Array),
      error: null,
    });

    await new UsageRepository(gw.db.dataSource).add(OrgId('acme'), {
      turnId: TurnId(turnId),
      kind: 'turn',
      model: 'seeing',
      inputTokens: 1200,
      outputTokens: 80,
      cachedTokens: 1000,
      cost: 0.00036,
    });
    expect((await gw.call('GET', `/v1/turns/${turnId}/usage`)).body).toEqual([
      {
        kind: 'turn',
        model: 'seeing',
        inputTokens: 1200,
        outputTokens: 80,
        cachedTokens: 1000,
        cost: 0.00036,
      },
    ]);
    expect((await gw.call('GET', `/v1/turns/${turnId}/trace`)).body).toEqual([
      { kind: 'SKILL_SELECT', skillIds: [factCheck.id], at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    ]);
  });

  it('has no trace entry and no selected skills for a turn without /slug', async () => {
    const turnId = await openTurn(gw, await newConversation(gw), 'no skills here');
    expect((await gw.call('GET', `/v1/turns/${turnId}`)).body.selectedSkillIds).toEqual([]);
    expect((await gw.call('GET', `/v1/turns/${turnId}/trace`)).body).toEqual([]);
  });

  it('answers 404 for a missing turn', async () => {
    for (const path of ['', '/usage', '/trace']) {
      expect((await gw.call('GET', `/v1/turns/${randomUUID()}${path}`)).status).toBe(404);
    }
  });
});

describe('POST /v1/turns/:id/requests/:blockId', () => {
  it('answers a clarification: the block gets the answer, the turn runs again, a job and events follow', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId);
    const request = await pauseWithRequest(gw, turnId, 'clarification_request');
    const sse = await openSse(gw, conversationId);

    const res = await gw.call('POST', `/v1/turns/${turnId}/requests/${request.id}`, {
      body: { answer: '2025' },
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ turnId, status: 'running' });
    const answered = (await blocks().getBlock(OrgId('acme'), request.id))!.block;
    expect(answered).toEqual({ ...request, answer: '2025' });
    expect((await turns().get(OrgId('acme'), TurnId(turnId)))!.status).toBe('running');
    expect(await job(gw, QueueName.Turns, `run-turn:${turnId}:answer-${request.id}`)).toEqual({
      name: 'run-turn',
      data: { orgId: 'acme', turnId },
    });
    expect((await sse.take(2)).map((e) => e.data)).toEqual([
      { type: 'block_finished', turnId, block: answered },
      { type: 'turn_state', turnId, status: 'running' },
    ]);
    sse.close();

    const again = await gw.call('POST', `/v1/turns/${turnId}/requests/${request.id}`, {
      body: { answer: 'x' },
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('request_not_pending');
  });

  it('answers an approval with a note, or without one', async () => {
    for (const body of [{ approved: false, note: 'Not that server.' }, { approved: true }]) {
      const conversationId = await newConversation(gw);
      const turnId = await openTurn(gw, conversationId);
      const request = await pauseWithRequest(gw, turnId, 'approval_request');
      const res = await gw.call('POST', `/v1/turns/${turnId}/requests/${request.id}`, { body });
      expect(res.status).toBe(202);
      expect((await blocks().getBlock(OrgId('acme'), request.id))!.block).toEqual({
        ...request,
        approved: body.approved,
        note: body.note ?? null,
      });
    }
  });

  it('validates the answer against the kind of request', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId);
    const clarification = await pauseWithRequest(gw, turnId, 'clarification_request');
    for (const body of [{ approved: true }, { answer: '' }, undefined]) {
      const res = await gw.call('POST', `/v1/turns/${turnId}/requests/${clarification.id}`, { body });
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({
        code: 'validation_failed',
        message: expect.stringMatching(/answer|approved/),
      });
    }
    expect((await turns().get(OrgId('acme'), TurnId(turnId)))!.status).toBe('paused');
  });

  it('refuses blocks that are not a pending request of that turn', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId);
    const [userMessage] = await blocks().listTurnMessages(OrgId('acme'), TurnId(turnId));
    const notRequest = await gw.call('POST', `/v1/turns/${turnId}/requests/${userMessage.blocks[0].id}`, {
      body: { answer: 'x' },
    });
    expect(notRequest.status).toBe(409);
    expect(notRequest.body.error.code).toBe('request_not_pending');

    const otherConversation = await newConversation(gw);
    const otherTurn = await openTurn(gw, otherConversation);
    const elsewhere = await pauseWithRequest(gw, otherTurn, 'clarification_request');
    const wrongTurn = await gw.call('POST', `/v1/turns/${turnId}/requests/${elsewhere.id}`, {
      body: { answer: 'x' },
    });
    expect(wrongTurn.status).toBe(404);
    const missing = await gw.call('POST', `/v1/turns/${turnId}/requests/${randomUUID()}`, {
      body: { answer: 'x' },
    });
    expect(missing.status).toBe(404);

    // A pending request on a turn that is not paused (cut off meanwhile) is not answerable.
    await setStatus(gw, otherTurn, 'cut_off');
    const settled = await gw.call('POST', `/v1/turns/${otherTurn}/requests/${elsewhere.id}`, {
      body: { answer: 'x' },
    });
    expect(settled.status).toBe(409);
    expect(settled.body.error.code).toBe('request_not_pending');
  });
});

describe('POST /v1/turns/:id/cancel', () => {
  it('flags an open turn, tells its worker on the cancel channel and enqueues the cancel job', async () => {
    const cancels = await cancelListener(gw);
    try {
      const conversationId = await newConversation(gw);
      const turnId = await openTurn(gw, conversationId);
      await setStatus(gw, turnId, 'running');

      const res = await gw.call('POST', `/v1/turns/${turnId}/cancel`);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ turnId, status: 'running' });
      const [row] = await gw.db.dataSource.query('SELECT cancel_requested_at FROM turns WHERE id = $1', [
        turnId,
      ]);
      expect(row.cancel_requested_at).toBeInstanceOf(Date);
      expect(await job(gw, QueueName.Turns, `run-turn:${turnId}:cancel`)).toEqual({
        name: 'run-turn',
        data: { orgId: 'acme', turnId },
      });
      expect(await cancels.heard()).toEqual([turnId]);
    } finally {
      await cancels.close();
    }
  });

  it('leaves a settled turn as it is', async () => {
    const conversationId = await newConversation(gw);
    const turnId = await openTurn(gw, conversationId);
    await setStatus(gw, turnId, 'completed');
    const res = await gw.call('POST', `/v1/turns/${turnId}/cancel`, { body: {} });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ turnId, status: 'completed' });
    const [row] = await gw.db.dataSource.query('SELECT cancel_requested_at FROM turns WHERE id = $1', [
      turnId,
    ]);
    expect(row.cancel_requested_at).toBeNull();
    expect(await job(gw, QueueName.Turns, `run-turn:${turnId}:cancel`)).toBeUndefined();
  });
});

describe('POST /v1/turns/:id/retry', () => {
  /** A conversation whose only turn was opened with a document and effort `high`, then ended `status`. */
  async function settledTurn(status: 'failed' | 'cut_off' | 'completed') {
    const conversationId = await newConversation(gw);
    const doc = await attachment(gw, { conversationId });
    const sent = await send(gw, conversationId, {
      text: '/fact-check the figures',
      attachmentIds: [doc],
      effort: 'high',
    });
    const turnId: string = sent.body.turnId;
    await turns().updateStatus(OrgId('acme'), TurnId(turnId), status, {
      error: status === 'failed' ? 'model_error' : null,
    });
    return { conversationId, turnId, doc };
  }

  it.each(['failed', 'cut_off'] as const)(
    'opens a new queued turn with the same message after a %s latest turn, and enqueues it',
    async (status) => {
      const { conversationId, turnId, doc } = await settledTurn(status);
      const res = await gw.call('POST', `/v1/turns/${turnId}/retry`);
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ turnId: expect.any(String) });
      const retried = res.body.turnId;
      expect(retried).not.toBe(turnId);
      const [before, after] = await Promise.all([
        turns().get(OrgId('acme'), TurnId(turnId)),
        turns().get(OrgId('acme'), retried),
      ]);
      expect(after).toMatchObject({
        conversationId,
        n: 2,
        status: 'queued',
        effort: 'high',
        selectedSkillIds: before!.selectedSkillIds,
        error: null,
      });
      expect(before!.selectedSkillIds).toHaveLength(1);
      const [message] = await blocks().listTurnMessages(OrgId('acme'), retried);
      expect(message).toMatchObject({
        role: 'user',
        attachmentIds: [doc],
        blocks: [{ kind: 'text', text: '/fact-check the figures', steering: false }],
      });
      expect(await job(gw, QueueName.Turns, `run-turn:${retried}:open`)).toEqual({
        name: 'run-turn',
        data: { orgId: 'acme', turnId: retried },
      });
    },
  );

  it('refuses 409 retry_refused a completed, open or earlier turn, and a second retry', async () => {
    const completed = await settledTurn('completed');
    const { turnId } = await settledTurn('failed');
    const retried = (await gw.call('POST', `/v1/turns/${turnId}/retry`)).body.turnId;
    for (const id of [completed.turnId, turnId, retried]) {
      const res = await gw.call('POST', `/v1/turns/${id}/retry`);
      expect(res.status).toBe(409);
      expect(res.body.error).toEqual({
        code: 'retry_refused',
        message: expect.stringMatching(/latest turn/),
      });
    }
    // The earlier failed turn stays refused once a later one exists, however that one ended.
    await setStatus(gw, retried, 'failed');
    expect((await gw.call('POST', `/v1/turns/${turnId}/retry`)).status).toBe(409);
    // Nothing was steered into the open turn by the refused retries.
    expect(await blocks().listTurnMessages(OrgId('acme'), retried)).toHaveLength(1);
  });

  it('opens one turn when the same retry arrives twice at once', async () => {
    const { conversationId, turnId } = await settledTurn('cut_off');
    const answers = await Promise.all([1, 2].map(() => gw.call('POST', `/v1/turns/${turnId}/retry`)));
    expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
    const listed = await turns().listForConversation(OrgId('acme'), ConversationId(conversationId));
    expect(listed.map((t) => t.n)).toEqual([1, 2]);
    expect(await blocks().listTurnMessages(OrgId('acme'), listed[1].id)).toHaveLength(1);
  });

  it("answers another user's, another org's and a missing turn 404", async () => {
    const { turnId } = await settledTurn('failed');
    for (const as of ['bob', 'mallory'] as const) {
      const res = await gw.call('POST', `/v1/turns/${turnId}/retry`, { as });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await gw.call('POST', `/v1/turns/${randomUUID()}/retry`)).status).toBe(404);
    expect(
      (
        await turns().listForConversation(
          OrgId('acme'),
          (await turns().get(OrgId('acme'), TurnId(turnId)))!.conversationId,
        )
      ).length,
    ).toBe(1);
  });
});
