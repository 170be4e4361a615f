import {
  blocksOf,
  startE2EPortal,
  startFakeOpenAI,
  type E2EConversation,
  type E2EPortal,
  type FakeOpenAI,
  type FakeRequest,
} from '@portal/testing';

/**
 * End to end over HTTP, the output guardrail (SPEC 3): an agent created through the API on model
 * `fast` with reviewer `thinker`. The SSE stream carries the answer sentence by sentence as the
 * reviewer passes it; a blocked sentence never reaches a client nor the transcript.
 */
let fake: FakeOpenAI;
let e2e: E2EPortal;
let chat: E2EConversation;

const sentenceOf = (request: FakeRequest) =>
  /<sentence>\n([^]*)\n<\/sentence>$/.exec(request.body.messages[1].content)![1];

beforeAll(async () => {
  fake = await startFakeOpenAI();
  e2e = await startE2EPortal(fake);
  const created = await e2e.api('alice').post('/v1/agents', {
    id: 'guarded',
    name: 'Guarded',
    model: 'fast',
    reviewer: 'thinker',
  });
  expect(created.status).toBe(201);
  chat = await e2e.conversation('alice', 'guarded');
  e2e.model.reviewer = (request) =>
    sentenceOf(request).includes('hunter2') ? 'BLOCK: leaks a password' : 'PASS';
}, 60_000);

afterAll(async () => {
  await e2e?.stop();
  await fake?.close();
});

const tag = (key: string) => e2e.model.tag(key);

it('streams the reviewed answer sentence by sentence, with review usage rows', async () => {
  const reviewed = e2e.model.reviewRequests.length;
  e2e.model.script('pass', { text: 'All good here. Nothing to hide!', chunkSize: 4 });
  const { turnId, finish, events } = await chat.run(`${tag('pass')} Anything?`);
  expect(finish).toMatchObject({ status: 'completed' });

  const reviews = e2e.model.reviewRequests.slice(reviewed);
  expect(reviews.map(sentenceOf)).toEqual(['All good here. ', 'Nothing to hide!']);
  expect(reviews.map((r) => [r.body.model, 'tools' in r.body])).toEqual([
    ['fake-thinker', false],
    ['fake-thinker', false],
  ]);
  const [answer] = blocksOf(await chat.messages(turnId)).slice(-1);
  expect(answer).toMatchObject({ kind: 'text', text: 'All good here. Nothing to hide!' });
  const deltas = events.filter((e) => e.data.type === 'text_delta').map((e) => e.data);
  expect(deltas).toEqual([
    { type: 'text_delta', turnId, blockId: answer.id, text: 'All good here. ' },
    { type: 'text_delta', turnId, blockId: answer.id, text: 'Nothing to hide!' },
  ]);

  const usage = (await chat.api.get(`/v1/turns/${turnId}/usage`)).body as { kind: string; model: string }[];
  expect(usage.filter((u) => u.kind !== 'summary').map((u) => [u.kind, u.model])).toEqual([
    ['review', 'thinker'],
    ['review', 'thinker'],
    ['turn', 'fast'],
  ]);
  const turnRow = usage.find((u) => u.kind === 'turn') as unknown as { inputTokens: number };
  expect((await chat.turn(turnId)).contextTokens).toBe(turnRow.inputTokens);
  expect(await chat.violations(turnId)).toEqual([]);
});

it('a blocked sentence never reaches a client nor the transcript, and the turn fails', async () => {
  e2e.model.script('block', { text: 'Sure. The password is hunter2. Anything else?', chunkSize: 4 });
  const { turnId, finish, events } = await chat.run(`${tag('block')} What is the password?`);
  expect(finish).toMatchObject({ status: 'failed', error: 'blocked_by_review: leaks a password' });

  expect(JSON.stringify(events)).not.toContain('hunter2');
  expect(events.filter((e) => e.data.type === 'text_delta').map((e) => e.data.text)).toEqual(['Sure. ']);
  const messages = await chat.messages(turnId);
  expect(JSON.stringify(messages)).not.toContain('hunter2');
  expect(blocksOf(messages).slice(-1)).toEqual([expect.objectContaining({ kind: 'text', text: 'Sure. ' })]);
  expect(await chat.turn(turnId)).toMatchObject({
    status: 'failed',
    error: 'blocked_by_review: leaks a password',
  });
  expect(await chat.violations(turnId)).toEqual([]);
});
