import { randomUUID } from 'node:crypto';
import { BLOCK_TEXT_TSV, BlockRepository, TurnRepository, UsageRepository } from '@portal/dal';
import { type Block, OrgId, TurnId } from '@portal/domain';
import {
  newConversation,
  openTurn,
  setStatus,
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

describe('conversations', () => {
  it('creates one with an agent of the org; another org agent or a missing one is 404', async () => {
    const res = await gw.call('POST', '/v1/conversations', { as: 'bob', body: { agentId: 'researcher' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String) });
    for (const agentId of ['rival', 'nobody']) {
      const missing = await gw.call('POST', '/v1/conversations', { as: 'bob', body: { agentId } });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
    }
  });

  it("lists the caller's own, most recently updated first", async () => {
    const first = await newConversation(gw, 'carol');
    const second = await newConversation(gw, 'carol', 'blind');
    await openTurn(gw, first, 'bump', 'carol');
    const res = await gw.call('GET', '/v1/conversations', { as: 'carol' });
    expect(res.body).toEqual([
      { id: first, agentId: 'researcher', title: null, updatedAt: expect.any(String) },
      { id: second, agentId: 'blind', title: null, updatedAt: expect.any(String) },
    ]);
    expect((await gw.call('GET', '/v1/conversations', { as: 'dave' })).body).toEqual([]);
  });

  it('shows a conversation with its turns', async () => {
    const id = await newConversation(gw);
    const turnId = await openTurn(gw, id, 'first');
    const res = await gw.call('GET', `/v1/conversations/${id}`);
    expect(res.body).toEqual({
      id,
      agentId: 'researcher',
      title: null,
      turns: [
        {
          id: turnId,
          n: 1,
          kind: 'turn',
          status: 'queued',
          effort: 'medium',
          error: null,
          model: 'seeing',
          contextTokens: null,
          usage: { inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: 0 },
        },
      ],
    });
  });

  it("keeps a failed turn's reason, context size and summed usage after a reload", async () => {
    const id = await newConversation(gw);
    const failedId = await openTurn(gw, id, 'first');
    const usage = new UsageRepository(gw.db.dataSource);
    for (const [inputTokens, cost] of [
      [1000, 0.0012],
      [1500, 0.0017],
    ]) {
      await usage.add(OrgId('acme'), {
        turnId: TurnId(failedId),
        kind: 'turn',
        model: 'seeing',
        inputTokens,
        outputTokens: 100,
        cachedTokens: 800,
        cost,
      });
    }
    await new TurnRepository(gw.db.dataSource).updateStatus(OrgId('acme'), TurnId(failedId), 'failed', {
      error: 'model_error: the provider answered 503',
      contextTokens: 1500,
    });
    const nextId = await openTurn(gw, id, 'second');

    const { body } = await gw.call('GET', `/v1/conversations/${id}`);
    expect(body.turns).toEqual([
      expect.objectContaining({
        id: failedId,
        status: 'failed',
        error: 'model_error: the provider answered 503',
        contextTokens: 1500,
        usage: { inputTokens: 2500, outputTokens: 200, cachedTokens: 1600, cost: expect.closeTo(0.0029, 10) },
      }),
      expect.objectContaining({ id: nextId, status: 'queued', error: null }),
    ]);
  });

  it('shows the transcript with summaries stripped of their references', async () => {
    const id = await newConversation(gw);
    const turnId = await openTurn(gw, id, '/fact-check check this');
    const blocks = new BlockRepository(gw.db.dataSource);
    const message = await blocks.addMessage(OrgId('acme'), TurnId(turnId), 'assistant');
    const answer: Block[] = [
      {
        id: randomUUID(),
        seq: 2,
        kind: 'compaction',
        summary: 'Summary of turns 1–1\n- Revenue was $4.2M (ref:tr_8f2c).',
        trigger: 'AUTO',
        coversTurns: { from: 1, to: 1 },
      },
      { id: randomUUID(), seq: 3, kind: 'text', text: 'Checked.', narration: false, steering: false },
    ];
    await blocks.append(OrgId('acme'), TurnId(turnId), answer, { messageId: message!.id });
    await setStatus(gw, turnId, 'completed');

    const res = await gw.call('GET', `/v1/conversations/${id}/messages`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      {
        id: expect.any(String),
        turnId,
        role: 'user',
        attachmentIds: [],
        blocks: [
          {
            id: expect.any(String),
            seq: 1,
            kind: 'text',
            text: '/fact-check check this',
            narration: false,
            steering: false,
          },
        ],
      },
      {
        id: message!.id,
        turnId,
        role: 'assistant',
        attachmentIds: [],
        blocks: [{ ...answer[0], summary: 'Summary of turns 1–1\n- Revenue was $4.2M.' }, answer[1]],
      },
    ]);
  });

  describe('PATCH /v1/conversations/:id', () => {
    it('renames it and answers the conversation; the list shows the name in the same place', async () => {
      const id = await newConversation(gw, 'dave');
      const other = await newConversation(gw, 'dave');
      const res = await gw.call('PATCH', `/v1/conversations/${id}`, {
        as: 'dave',
        body: { title: '  Doanh thu quý 3 🚀  ' },
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id, agentId: 'researcher', title: 'Doanh thu quý 3 🚀', turns: [] });
      const listed = (await gw.call('GET', '/v1/conversations', { as: 'dave' })).body;
      expect(listed.map((c: { id: string; title: string | null }) => [c.id, c.title])).toEqual([
        [other, null],
        [id, 'Doanh thu quý 3 🚀'],
      ]);
    });

    it.each([
      ['an empty title', { title: '' }, /^title: /],
      ['a blank title', { title: '   ' }, /^title: /],
      ['a title over 200 characters', { title: 'x'.repeat(201) }, /^title: /],
      ['no title', {}, /^title: /],
      ['another field', { title: 'ok', agentId: 'blind' }, /^agentId: /],
    ])('refuses %s with 400 validation_failed naming the field', async (_, body, message) => {
      const id = await newConversation(gw);
      const res = await gw.call('PATCH', `/v1/conversations/${id}`, { body });
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({ code: 'validation_failed', message: expect.stringMatching(message) });
      expect((await gw.call('GET', `/v1/conversations/${id}`)).body.title).toBeNull();
    });

    it('takes a title of exactly 200 characters', async () => {
      const id = await newConversation(gw);
      const title = 'ư'.repeat(200);
      expect((await gw.call('PATCH', `/v1/conversations/${id}`, { body: { title } })).body.title).toBe(title);
    });

    it("answers another user's, another org's or a missing conversation 404 and changes nothing", async () => {
      const id = await newConversation(gw, 'alice');
      for (const as of ['bob', 'mallory'] as const) {
        const res = await gw.call('PATCH', `/v1/conversations/${id}`, { as, body: { title: 'Mine now' } });
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('not_found');
      }
      expect(
        (await gw.call('PATCH', `/v1/conversations/${randomUUID()}`, { body: { title: 'x' } })).status,
      ).toBe(404);
      expect((await gw.call('GET', `/v1/conversations/${id}`)).body.title).toBeNull();
    });
  });

  it("answers another user's conversation 404 like a missing one", async () => {
    const id = await newConversation(gw, 'alice');
    for (const path of [`/v1/conversations/${id}`, `/v1/conversations/${id}/messages`]) {
      expect((await gw.call('GET', path, { as: 'bob' })).status).toBe(404);
    }
    expect((await gw.call('GET', `/v1/conversations/${randomUUID()}`)).status).toBe(404);
    expect((await gw.call('GET', '/v1/conversations/not-a-uuid')).status).toBe(404);
  });
});

/** A conversation of `as` with one settled turn: the person's text, then the answer (when given). */
async function conversation(opts: {
  said: string;
  answer?: string;
  title?: string;
  as?: Who;
}): Promise<string> {
  const as = opts.as ?? 'alice';
  const id = await newConversation(gw, as, as === 'mallory' ? 'rival' : 'researcher');
  const turnId = await openTurn(gw, id, opts.said, as);
  const orgId = as === 'mallory' ? 'globex' : 'acme';
  if (opts.answer) {
    const blocks = new BlockRepository(gw.db.dataSource);
    const message = await blocks.addMessage(OrgId(orgId), TurnId(turnId), 'assistant');
    await blocks.append(
      OrgId(orgId),
      TurnId(turnId),
      [{ kind: 'text', text: opts.answer, narration: false, steering: false }],
      {
        messageId: message!.id,
      },
    );
  }
  await setStatus(gw, turnId, 'completed', orgId);
  if (opts.title) {
    await gw.call('PATCH', `/v1/conversations/${id}`, { as, body: { title: opts.title } });
  }
  return id;
}

async function search(q: string, as: Who = 'alice') {
  const res = await gw.call('GET', `/v1/conversations?q=${encodeURIComponent(q)}`, { as });
  expect(res.status).toBe(200);
  return res.body as {
    id: string;
    agentId: string;
    title: string | null;
    updatedAt: string;
    snippet: string;
  }[];
}

describe('GET /v1/conversations?q=', () => {
  let titled: string;
  let said: string;
  let answered: string;
  beforeAll(async () => {
    titled = await conversation({ said: 'xin chào', title: 'Doanh thu quý 3' });
    said = await conversation({ said: 'Báo cáo doanh thu của quý 3 năm nay cho ban giám đốc' });
    answered = await conversation({
      said: 'Tóm tắt giúp tôi',
      answer: 'Theo báo cáo, doanh thu quý 3 tăng 12% so với cùng kỳ nhờ xuất khẩu cà phê.',
    });
    await conversation({ said: 'chi phí vận chuyển tháng này' });
    await conversation({ said: 'doanh thu quý 3 của bob', as: 'bob' });
    await conversation({ said: 'doanh thu quý 3 của globex', as: 'mallory' });
  });

  it('finds titles and message text, Vietnamese included, title matches first, each with a snippet', async () => {
    const hits = await search('doanh thu quý');
    expect(hits.map((h) => h.id)).toEqual([titled, expect.any(String), expect.any(String)]);
    expect(new Set(hits.map((h) => h.id))).toEqual(new Set([titled, said, answered]));
    expect(hits[0]).toEqual({
      id: titled,
      agentId: 'researcher',
      title: 'Doanh thu quý 3',
      updatedAt: expect.any(String),
      snippet: 'Doanh thu quý 3',
    });
    const byId = new Map(hits.map((h) => [h.id, h.snippet]));
    expect(byId.get(said)).toContain('doanh thu của quý 3 năm nay');
    expect(byId.get(answered)).toContain('doanh thu quý 3 tăng 12%');
  });

  it('ignores case and how the tone marks were typed, but not the tone marks themselves', async () => {
    const ids = (await search('doanh thu quý')).map((h) => h.id);
    expect((await search('DOANH THU QUÝ')).map((h) => h.id)).toEqual(ids);
    expect((await search('doanh thu quý'.normalize('NFD'))).map((h) => h.id)).toEqual(ids);
    // "quy" and "quý" are different words in Vietnamese.
    expect(await search('quy')).toEqual([]);
    expect((await search('giám đốc')).map((h) => h.id)).toEqual([said]);
    expect((await search('"quý 3 tăng"')).map((h) => h.id)).toEqual([answered]);
    expect((await search('doanh thu -giám')).map((h) => h.id).sort()).toEqual([titled, answered].sort());
  });

  it('ranks the conversation that says it more first, whatever was updated last', async () => {
    const often = await conversation({
      said: 'hồ tiêu',
      answer: 'Hồ tiêu: giá hồ tiêu tăng, xuất hồ tiêu sang châu Âu, hồ tiêu Việt Nam dẫn đầu.',
    });
    const once = await conversation({ said: 'Một câu dài về nông sản, có nhắc hồ tiêu một lần thôi.' });
    expect((await search('hồ tiêu')).map((h) => h.id)).toEqual([often, once]);
  });

  it('answers snippets as plain text: no markup of its own, markup in the text left inert', async () => {
    const hostile = await conversation({
      said: `<b>bí mật</b> <img src=x onerror="alert(1)"> <script>alert(2)</script> ${'lời '.repeat(400)}`,
    });
    const [hit] = await search('bí mật');
    expect(hit.id).toBe(hostile);
    expect(hit.snippet).toContain('bí mật');
    expect(hit.snippet).not.toMatch(/[<>]/);
    expect(hit.snippet).not.toMatch(/\s{2}|\n/);
    expect([...hit.snippet].length).toBeLessThanOrEqual(200);
  });

  it("shows only the caller's own conversations", async () => {
    expect((await search('doanh thu', 'bob')).map((h) => h.snippet)).toEqual(['doanh thu quý 3 của bob']);
    expect((await search('doanh thu', 'mallory')).map((h) => h.snippet)).toEqual([
      'doanh thu quý 3 của globex',
    ]);
    expect(await search('doanh thu', 'carol')).toEqual([]);
  });

  it('lists every conversation for a blank q, and refuses a q over 500 characters', async () => {
    const all = (await gw.call('GET', '/v1/conversations')).body;
    expect((await gw.call('GET', '/v1/conversations?q=%20%20')).body).toEqual(all);
    expect(await search('!!! ???')).toEqual([]);
    const long = await gw.call('GET', `/v1/conversations?q=${'a'.repeat(501)}`);
    expect(long.status).toBe(400);
    expect(long.body.error).toEqual({ code: 'validation_failed', message: expect.stringMatching(/^q: /) });
    const twice = await gw.call('GET', '/v1/conversations?q=a&q=b');
    expect(twice.status).toBe(400);
  });

  it('finds message text through the index of migration ConversationSearch', async () => {
    const plan: { 'QUERY PLAN': string }[] = await gw.db.dataSource.transaction(async (em) => {
      await em.query('SET LOCAL enable_seqscan = off');
      return em.query(
        `EXPLAIN SELECT b.id FROM blocks b
         WHERE b.org_id = 'acme' AND b.kind = 'text' AND ${BLOCK_TEXT_TSV} @@ websearch_to_tsquery('simple', 'quý')`,
      );
    });
    expect(plan.map((row) => row['QUERY PLAN']).join('\n')).toContain('blocks_text_search_idx');
  });
});
