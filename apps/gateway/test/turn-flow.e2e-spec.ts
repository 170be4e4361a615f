import {
  blocksOf,
  fakeError,
  subscribeEvents,
  E2E_KEYS,
  finishedBlocks,
  startE2EPortal,
  startFakeOpenAI,
  type E2EConversation,
  type E2EPortal,
  type FakeOpenAI,
} from '@portal/testing';

/**
 * End to end over HTTP: the four built services as processes, real Postgres and Redis, the fake
 * model as the catalogue's baseURL. A plain turn, skill selection, tools with narration and
 * thinking, effort, a rate limit, and another org's view of it all.
 */
let fake: FakeOpenAI;
let e2e: E2EPortal;
let chat: E2EConversation;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  e2e = await startE2EPortal(fake);
  chat = await e2e.conversation('alice', 'helper');
}, 60_000);

afterAll(async () => {
  await e2e?.stop();
  await fake?.close();
});

const tag = (key: string) => e2e.model.tag(key);
const types = (events: { data: { type: string } }[]) => events.map((e) => e.data.type);

describe('a plain turn', () => {
  it('streams turn_started … turn_finished in order, and the transcript equals what streamed', async () => {
    e2e.model.script('plain', { text: 'The answer is forty-two, as computed.', chunkSize: 6 });
    const { turnId, finish, events } = await chat.run(`${tag('plain')} What is the answer?`);
    expect(finish).toMatchObject({ type: 'turn_finished', status: 'completed' });

    const seen = types(events);
    expect(seen[0]).toBe('turn_started');
    expect(seen.at(-1)).toBe('turn_finished');
    expect(seen.indexOf('turn_state')).toBeLessThan(seen.indexOf('block_started'));
    expect(events.filter((e) => e.data.type === 'turn_state').map((e) => e.data.status)).toEqual([
      'queued',
      'running',
      'completed',
    ]);
    // Stream ids strictly increase.
    const ids = events.map((e) => e.id.split('-').map(Number));
    for (let i = 1; i < ids.length; i++) {
      expect(ids[i][0] > ids[i - 1][0] || (ids[i][0] === ids[i - 1][0] && ids[i][1] > ids[i - 1][1])).toBe(
        true,
      );
    }

    const messages = await chat.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const stored = blocksOf(messages);
    const streamed = finishedBlocks(events);
    expect(stored).toEqual(stored.map((b) => streamed.get(b.id)));
    expect(streamed.size).toBe(stored.length);
    const answer = stored.at(-1);
    expect(answer).toMatchObject({
      kind: 'text',
      text: 'The answer is forty-two, as computed.',
      narration: false,
    });
    // The deltas of the answer add up to its text.
    const deltas = events.filter((e) => e.data.type === 'text_delta' && e.data.blockId === answer!.id);
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((e) => e.data.text).join('')).toBe(answer!.kind === 'text' && answer!.text);
    expect(await chat.violations(turnId)).toEqual([]);

    const turn = await chat.turn(turnId);
    const [request] = e2e.model.requestsFor('plain');
    expect(turn).toMatchObject({ n: 1, status: 'completed', effort: 'medium', model: 'fast', error: null });
    expect(turn.contextTokens).toBeGreaterThan(0);

    const usage = await chat.api.get(`/v1/turns/${turnId}/usage`);
    const turnRows = usage.body.filter((r: { kind: string }) => r.kind === 'turn');
    expect(turnRows).toHaveLength(1);
    expect(turnRows[0]).toMatchObject({ model: 'fast', inputTokens: turn.contextTokens, cachedTokens: 0 });
    expect(turnRows[0].outputTokens).toBeGreaterThan(0);
    // Priced from the catalogue: 1 $/MTok in, 2 $/MTok out.
    expect(turnRows[0].cost).toBeCloseTo(
      (turnRows[0].inputTokens * 1 + turnRows[0].outputTokens * 2) / 1e6,
      9,
    );
    const usageEvents = events.filter((e) => e.data.type === 'usage' && e.data.row.kind === 'turn');
    expect(usageEvents.map((e) => e.data.row)).toEqual(turnRows);

    // What the model received: layers 1–4 as system messages, then the message, streamed, no effort.
    expect(request.body).toMatchObject({ model: 'fake-fast', stream: true });
    expect(request.body).not.toHaveProperty('reasoning_effort');
    const system = request.body.messages.filter((m: { role: string }) => m.role === 'system');
    expect(system.map((m: { content: string }) => m.content.split('\n')[0])).toEqual([
      '# Portal floor',
      '# Author instructions',
      '# Skill catalogue',
    ]);
    expect(request.body.messages.at(-1)).toEqual({
      role: 'user',
      content: `${tag('plain')} What is the answer?`,
    });
    expect(request.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(
      expect.arrayContaining(['load_skill', 'ask_clarification', 'lookup', 'deploy']),
    );
  });

  it('names the conversation after turn 1 with a summary call that leaves contextTokens alone', async () => {
    const deadline = Date.now() + 10_000;
    let title: string | null = null;
    while (title === null && Date.now() < deadline) {
      title = (await chat.api.get(`/v1/conversations/${chat.id}`)).body.title;
      if (title === null) await new Promise((r) => setTimeout(r, 50));
    }
    expect(title).toBe('Title plain');
    const conversation = await chat.api.get(`/v1/conversations/${chat.id}`);
    const [first] = conversation.body.turns;
    const usage = await chat.api.get(`/v1/turns/${first.id}/usage`);
    expect(usage.body.map((r: { kind: string }) => r.kind).sort()).toEqual(['summary', 'turn']);
    const turn = await chat.turn(first.id);
    expect(turn.contextTokens).toBe(usage.body.find((r: { kind: string }) => r.kind === 'turn').inputTokens);
    expect(e2e.model.titleRequests).toHaveLength(1);
    expect(e2e.model.titleRequests[0].body).not.toHaveProperty('tools');
  });
});

/** The ids of acme's skills by slug, as alice sees them. */
async function skillIds(): Promise<Record<string, string>> {
  const res = await e2e.api('alice').get('/v1/skills');
  return Object.fromEntries(res.body.map((s: { slug: string; id: string }) => [s.slug, s.id]));
}

const systemLayers = (request: { body: any }) =>
  request.body.messages
    .filter((m: { role: string }) => m.role === 'system')
    .map((m: { content: string }) => m.content);

describe('skill selection', () => {
  it('puts a /slug-selected skill in layer 3, traces SKILL_SELECT and leaves it out of the catalogue', async () => {
    const ids = await skillIds();
    e2e.model.script('slug', 'Checked.');
    const text = `/fact-check ${tag('slug')} check this claim`;
    const { turnId, finish } = await chat.run(text);
    expect(finish.status).toBe('completed');

    const [request] = e2e.model.requestsFor('slug');
    const layers = systemLayers(request);
    expect(layers.map((l: string) => l.split('\n')[0])).toEqual([
      '# Portal floor',
      '# Author instructions',
      '# Selected skills',
      '# Skill catalogue',
    ]);
    expect(layers[2]).toContain('INSTRUCTIONS-OF-FACT-CHECK');
    expect(layers[3]).not.toContain('fact-check');
    expect(layers[3]).toContain('style-guide — The style-guide skill in one sentence.');
    expect(layers[3]).not.toContain('draft'); // bound but unpublished: not in the catalogue
    // The model reads the message without the leading slug; the transcript keeps it as typed.
    expect(request.body.messages.at(-1)).toEqual({
      role: 'user',
      content: `${tag('slug')} check this claim`,
    });
    const [user] = await chat.messages(turnId);
    expect(user.blocks).toEqual([expect.objectContaining({ kind: 'text', text })]);

    const turn = await chat.turn(turnId);
    expect(turn.selectedSkillIds).toEqual([ids['fact-check']]);
    expect(turn.catalogueSkillIds).toEqual([ids['style-guide']]);
    const trace = await chat.api.get(`/v1/turns/${turnId}/trace`);
    expect(trace.body).toEqual([
      { kind: 'SKILL_SELECT', skillIds: [ids['fact-check']], at: expect.any(String) },
    ]);
  });

  it('selects several skills in the order typed, a draft included, and drops an empty catalogue', async () => {
    const ids = await skillIds();
    e2e.model.script('slugs', 'Styled.');
    const { turnId } = await chat.run(`/draft /style-guide /fact-check ${tag('slugs')} polish it`);
    const layers = systemLayers(e2e.model.requestsFor('slugs')[0]);
    expect(layers.map((l: string) => l.split('\n')[0])).toEqual([
      '# Portal floor',
      '# Author instructions',
      '# Selected skills',
    ]);
    const order = ['DRAFT', 'STYLE-GUIDE', 'FACT-CHECK'].map((s) =>
      layers[2].indexOf(`INSTRUCTIONS-OF-${s}`),
    );
    expect(order.every((at) => at > 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const trace = await chat.api.get(`/v1/turns/${turnId}/trace`);
    expect(trace.body[0].skillIds).toEqual([ids['draft'], ids['style-guide'], ids['fact-check']]);
  });

  it.each([
    ['secret', "another user's private skill"],
    ['retired', 'an inactive skill'],
    ['no-such-skill', 'a slug that does not exist'],
    ['globex-only', "another org's skill"],
  ])('refuses /%s (%s) with skill_rejected and records nothing', async (slug) => {
    const before = (await chat.api.get(`/v1/conversations/${chat.id}`)).body.turns.length;
    const mark = chat.events.events.length;
    const requests = fake.requests.length;
    const res = await chat.post({ text: `/fact-check /${slug} ${tag('rejected')} go` });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('skill_rejected');
    expect(res.body.error.message).toContain(slug);
    expect((await chat.api.get(`/v1/conversations/${chat.id}`)).body.turns).toHaveLength(before);
    // Nothing was published either: a turn opened next streams from its own turn_started.
    e2e.model.script('after-reject', 'Fine.');
    const { turnId } = await chat.run(`${tag('after-reject')} next`);
    expect(
      chat.events.events.slice(mark).every((e) => e.data.turnId === turnId || e.data.type === 'usage'),
    ).toBe(true);
    expect(fake.requests.length).toBe(requests + 1);
  });
});

describe('tools, narration and thinking', () => {
  it('streams thinking, narration and a tool call, runs the HTTP tool and answers', async () => {
    const deep = await e2e.conversation('alice', 'deep');
    e2e.tools.respond((r) => ({ body: { found: `Q3 revenue was $4.2M (${r.body.query})` } }));
    e2e.model.script(
      'tool',
      {
        reasoning: 'The person wants a figure; I should look it up.',
        text: 'Let me look that up.',
        toolCalls: [{ id: 'call_q3', name: 'lookup', arguments: { query: 'Q3 revenue' } }],
      },
      { reasoning: 'The tool found it.', text: 'Q3 revenue was $4.2M.' },
    );
    const toolCalls = e2e.tools.requests.length;
    const { turnId, finish, events } = await deep.run(`${tag('tool')} What was Q3 revenue?`);
    expect(finish.status).toBe('completed');

    expect(e2e.tools.requests.slice(toolCalls)).toEqual([
      expect.objectContaining({ path: '/lookup', body: { query: 'Q3 revenue' } }),
    ]);
    const messages = await deep.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    const blocks = blocksOf(messages);
    expect(blocks.map((b) => [b.kind, b.kind === 'text' ? b.narration : null])).toEqual([
      ['text', false],
      ['thinking', null],
      ['text', true],
      ['tool_use', null],
      ['tool_result', null],
      ['thinking', null],
      ['text', false],
    ]);
    expect(blocks[1]).toMatchObject({ text: 'The person wants a figure; I should look it up.' });
    expect(blocks[2]).toMatchObject({ text: 'Let me look that up.' });
    expect(blocks[3]).toMatchObject({
      callId: 'call_q3',
      name: 'lookup',
      arguments: '{"query":"Q3 revenue"}',
    });
    expect(blocks[4]).toMatchObject({ callId: 'call_q3', outcome: 'ok' });
    expect(JSON.parse((blocks[4] as { content: string }).content)).toEqual({
      found: 'Q3 revenue was $4.2M (Q3 revenue)',
    });
    expect(blocks.map((b) => b.seq)).toEqual([...blocks.map((b) => b.seq)].sort((a, b) => a - b));

    // The stream said the same, with the deltas of the streamed blocks.
    const streamed = finishedBlocks(events);
    expect(blocks).toEqual(blocks.map((b) => streamed.get(b.id)));
    const started = events.filter((e) => e.data.type === 'block_started').map((e) => e.data.kind);
    expect(started).toEqual(['thinking', 'text', 'tool_use', 'thinking', 'text']);
    const thinking = events.filter(
      (e) => e.data.type === 'thinking_delta' && e.data.blockId === blocks[1].id,
    );
    expect(thinking.map((e) => e.data.text).join('')).toBe('The person wants a figure; I should look it up.');
    expect(await deep.violations(turnId)).toEqual([]);

    // The second call read the call and its result, answered.
    const second = e2e.model.requestsFor('tool')[1].body.messages;
    const call = second.find((m: any) => m.role === 'assistant' && m.tool_calls);
    expect(call.tool_calls).toEqual([
      expect.objectContaining({
        id: 'call_q3',
        function: { name: 'lookup', arguments: '{"query":"Q3 revenue"}' },
      }),
    ]);
    expect(second.find((m: any) => m.role === 'tool')).toMatchObject({ tool_call_id: 'call_q3' });

    // A later turn replays the call, its result and the answer, never the thinking or the narration.
    e2e.model.script('tool-next', 'Nothing more.');
    await deep.run(`${tag('tool-next')} Thanks.`);
    const replay = JSON.stringify(e2e.model.requestsFor('tool-next')[0].body.messages);
    expect(replay).toContain('call_q3');
    expect(replay).toContain('Q3 revenue was $4.2M.');
    expect(replay).not.toContain('Let me look that up.');
    expect(replay).not.toContain('I should look it up');
    expect(replay).not.toContain('The tool found it');
  });
});

describe('effort', () => {
  it('records an override on the turn and sends it as reasoning_effort to a reasoning model', async () => {
    const deep = await e2e.conversation('alice', 'deep');
    e2e.model.script('effort-high', 'High.');
    const high = await deep.run(`${tag('effort-high')} think hard`, { effort: 'high' });
    e2e.model.script('effort-default', 'Low.');
    const low = await deep.run(`${tag('effort-default')} think a little`);

    expect(e2e.model.requestsFor('effort-high')[0].body.reasoning_effort).toBe('high');
    expect(e2e.model.requestsFor('effort-default')[0].body.reasoning_effort).toBe('low'); // the agent's
    expect((await deep.turn(high.turnId)).effort).toBe('high');
    expect((await deep.turn(low.turnId)).effort).toBe('low');
    const conversation = await deep.api.get(`/v1/conversations/${deep.id}`);
    expect(conversation.body.turns.map((t: { effort: string }) => t.effort)).toEqual(['high', 'low']);
  });

  it('records the override but sends no effort to a model that cannot reason', async () => {
    e2e.model.script('effort-fast', 'Quick.');
    const { turnId } = await chat.run(`${tag('effort-fast')} think hard`, { effort: 'high' });
    expect((await chat.turn(turnId)).effort).toBe('high');
    expect(e2e.model.requestsFor('effort-fast')[0].body).not.toHaveProperty('reasoning_effort');
  });
});

describe('a rate-limited model', () => {
  it('retries after a 429 (waiting what retry-after-ms says) and completes with one usage row', async () => {
    e2e.model.script(
      'rate',
      fakeError(429, 'Rate limit reached', { headers: { 'retry-after-ms': '30' } }),
      'After the wait.',
    );
    const { turnId, finish, events } = await chat.run(`${tag('rate')} hello`);
    expect(finish.status).toBe('completed');
    expect(e2e.model.requestsFor('rate')).toHaveLength(2);
    const blocks = blocksOf(await chat.messages(turnId));
    expect(
      blocks.filter((b) => b.kind === 'text' && !b.steering).map((b) => (b as { text: string }).text),
    ).toEqual([`${tag('rate')} hello`, 'After the wait.']);
    const usage = await chat.api.get(`/v1/turns/${turnId}/usage`);
    expect(usage.body).toHaveLength(1);
    expect(events.filter((e) => e.data.type === 'block_started')).toHaveLength(1);
    expect(await chat.violations(turnId)).toEqual([]);
  });

  it('cuts the turn off with model_error once the retries are spent', async () => {
    const quota = fakeError(429, 'Quota exceeded', { headers: { 'retry-after-ms': '1' } });
    e2e.model.script('rate-out', quota, quota, quota, quota);
    const { finish, turnId } = await chat.run(`${tag('rate-out')} hello`);
    expect(finish).toMatchObject({
      status: 'cut_off',
      error: expect.stringMatching(/^model_error: HTTP 429 after 4 attempts/),
    });
    expect((await chat.turn(turnId)).error).toBe(finish.error);
    expect(e2e.model.requestsFor('rate-out')).toHaveLength(4);
  });
});

describe('tenancy', () => {
  let turnId: string;
  beforeAll(async () => {
    turnId = (await chat.api.get(`/v1/conversations/${chat.id}`)).body.turns[0].id;
  });

  const missing = '00000000-0000-4000-8000-000000000000';

  it.each([
    ['mallory', "another org's user"],
    ['bob', 'another user of the same org'],
  ] as const)(
    '%s (%s) gets 404 not_found for the conversation, its turns and its events',
    async (who, _why) => {
      const api = e2e.api(who);
      const reads = [
        api.get(`/v1/conversations/${chat.id}`),
        api.get(`/v1/conversations/${chat.id}/messages`),
        api.post(`/v1/conversations/${chat.id}/messages`, { text: 'hi' }),
        api.get(`/v1/turns/${turnId}`),
        api.get(`/v1/turns/${turnId}/usage`),
        api.get(`/v1/turns/${turnId}/trace`),
        api.post(`/v1/turns/${turnId}/cancel`),
        api.post(`/v1/turns/${turnId}/requests/${missing}`, { answer: 'x' }),
      ];
      for (const res of await Promise.all(reads)) {
        expect([res.status, res.body.error.code]).toEqual([404, 'not_found']);
      }
      // Exactly as a missing one answers.
      const absent = await api.get(`/v1/conversations/${missing}`);
      const theirs = await api.get(`/v1/conversations/${chat.id}`);
      expect(theirs.body.error.message.replace(chat.id, missing)).toBe(absent.body.error.message);

      const sse = await subscribeEvents(
        `${e2e.portal.baseURL}/v1/conversations/${chat.id}/events`,
        E2E_KEYS[who],
      );
      expect(sse.status).toBe(404);
      expect(sse.errorBody).toMatchObject({ error: { code: 'not_found' } });
      expect(sse.events).toEqual([]);
      const replay = await subscribeEvents(
        `${e2e.portal.baseURL}/v1/conversations/${chat.id}/events`,
        E2E_KEYS[who],
        {
          lastEventId: '0-0',
        },
      );
      expect(replay.status).toBe(404);
    },
  );

  it("refuses a conversation with another org's agent as a missing one", async () => {
    const res = await e2e.api('mallory').post('/v1/conversations', { agentId: 'helper' });
    expect([res.status, res.body.error.code]).toEqual([404, 'not_found']);
    const own = await e2e.api('mallory').get('/v1/conversations');
    expect(own.body).toEqual([]);
  });
});

describe('many conversations at once', () => {
  /**
   * The turn's events as `type` or `turn_state <status>`, without the title call's usage, which
   * follows the first turn's end by design (turn protocol, step 7).
   */
  const sequence = (events: { data: any }[]) =>
    events
      .filter((e) => !(e.data.type === 'usage' && e.data.row.kind === 'summary'))
      .map((e) => (e.data.type === 'turn_state' ? `turn_state ${e.data.status}` : e.data.type));

  it('streams every turn in protocol order: turn_started, queued, running, …, turn_finished', async () => {
    const chats = await Promise.all(Array.from({ length: 20 }, () => e2e.conversation('carol', 'helper')));
    const runs = await Promise.all(
      chats.map(async (c, ci) => {
        const out: { turnId: string; seen: string[] }[] = [];
        for (let i = 0; i < 6; i++) {
          const { turnId, events } = await c.run(`${tag(`many-${ci}`)} turn ${i}`);
          out.push({ turnId, seen: sequence(events) });
        }
        return out;
      }),
    );
    const disordered = runs
      .flat()
      .filter(({ seen }) => {
        const at = (s: string) => seen.indexOf(s);
        return !(
          at('turn_started') === 0 &&
          at('turn_state queued') > 0 &&
          at('turn_state queued') < at('turn_state running') &&
          at('turn_state running') < at('block_started') &&
          seen.at(-1) === 'turn_finished'
        );
      })
      .map(({ turnId, seen }) => `${turnId}: ${seen.join(', ')}`);
    expect(disordered).toEqual([]);
    for (const c of chats) c.close();
  }, 30_000);
});

describe('afterwards', () => {
  it('every turn of every conversation above keeps the six invariants (checkTurn on the API transcript)', async () => {
    expect(await e2e.violations()).toEqual([]);
  });
});
