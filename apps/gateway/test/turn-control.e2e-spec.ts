import {
  blocksOf,
  finishedBlocks,
  E2E_KEYS,
  startE2EPortal,
  startFakeOpenAI,
  subscribeEvents,
  type E2EConversation,
  type E2EPortal,
  type FakeOpenAI,
  type SseEvent,
} from '@portal/testing';

/**
 * End to end over HTTP, the person in the loop: approvals and clarifications answered through the
 * requests endpoint, a message while paused, steering while running, cancel mid-stream, and a
 * client that reconnects with Last-Event-ID mid-turn.
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
const pausedOn = (turnId: string, kind: string) =>
  chat.event(turnId, 'block_finished', (d) => d.block.kind === kind).then((e) => e.data.block);

/** A slow answer: `words` words, one chunk every `delayMs`. */
const slowText = (words: number, delayMs: number) => ({
  text: Array.from({ length: words }, (_, i) => `word${i}`).join(' ') + '.',
  delayMs,
});

describe('approval', () => {
  it('pauses on a tool that needs approval, refuses a message meanwhile, and runs the tool once approved', async () => {
    e2e.model.script(
      'approve',
      { toolCalls: [{ id: 'call_dep1', name: 'deploy', arguments: { query: 'v2' } }] },
      'Deployed v2.',
    );
    const toolCalls = e2e.tools.requests.length;
    const turnId = await chat.open(`${tag('approve')} deploy v2`);
    const request = await pausedOn(turnId, 'approval_request');
    expect(request).toMatchObject({ callId: 'call_dep1', name: 'deploy', approved: null, note: null });
    await chat.event(turnId, 'turn_state', (d) => d.status === 'paused');
    expect((await chat.turn(turnId)).status).toBe('paused');
    expect(await chat.violations(turnId)).toEqual([]);
    expect(e2e.tools.requests.length).toBe(toolCalls); // not run before the person says so

    // A plain message while paused is refused and records nothing.
    const refused = await chat.post({ text: 'hurry up' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('turn_paused');
    expect(
      blocksOf(await chat.messages(turnId)).some((b) => b.kind === 'text' && b.text === 'hurry up'),
    ).toBe(false);

    const answered = await chat.api.post(`/v1/turns/${turnId}/requests/${request.id}`, { approved: true });
    expect(answered.status).toBe(202);
    const finish = await chat.finished(turnId);
    expect(finish.data.status).toBe('completed');
    expect(e2e.tools.requests.slice(toolCalls)).toEqual([
      expect.objectContaining({ path: '/deploy', body: { query: 'v2' } }),
    ]);

    const blocks = blocksOf(await chat.messages(turnId));
    expect(blocks.map((b) => b.kind)).toEqual([
      'text',
      'tool_use',
      'approval_request',
      'tool_result',
      'text',
    ]);
    expect(blocks[2]).toMatchObject({ approved: true });
    expect(blocks[3]).toMatchObject({ callId: 'call_dep1', outcome: 'ok' });
    expect(finishedBlocks(chat.events.ofTurn(turnId)).get(request.id)).toMatchObject({ approved: true });
    const states = chat.events
      .ofTurn(turnId)
      .filter((e) => e.data.type === 'turn_state')
      .map((e) => e.data.status);
    expect(states).toEqual(['queued', 'running', 'paused', 'running', 'completed']);
    expect(await chat.violations(turnId)).toEqual([]);
    // A second answer is refused: the request is no longer pending.
    const again = await chat.api.post(`/v1/turns/${turnId}/requests/${request.id}`, { approved: false });
    expect(again.status).toBeGreaterThanOrEqual(400);
  });

  it('denies: the tool never runs and the model reads a denied result with the note', async () => {
    e2e.model.script(
      'deny',
      { toolCalls: [{ id: 'call_dep2', name: 'deploy', arguments: { query: 'v3' } }] },
      'Understood, not deploying.',
    );
    const toolCalls = e2e.tools.requests.length;
    const turnId = await chat.open(`${tag('deny')} deploy v3`);
    const request = await pausedOn(turnId, 'approval_request');
    const res = await chat.api.post(`/v1/turns/${turnId}/requests/${request.id}`, {
      approved: false,
      note: 'not on a Friday',
    });
    expect(res.status).toBe(202);
    expect((await chat.finished(turnId)).data.status).toBe('completed');
    expect(e2e.tools.requests.length).toBe(toolCalls);

    const blocks = blocksOf(await chat.messages(turnId));
    const result = blocks.find((b) => b.kind === 'tool_result');
    expect(result).toMatchObject({ callId: 'call_dep2', outcome: 'denied' });
    expect((result as { content: string }).content).toContain('not on a Friday');
    const tool = e2e.model.requestsFor('deny')[1].body.messages.findLast((m: any) => m.role === 'tool');
    expect(tool).toMatchObject({ tool_call_id: 'call_dep2' });
    expect(JSON.stringify(tool.content)).toContain('not on a Friday');
    expect(await chat.violations(turnId)).toEqual([]);
  });
});

describe('clarification', () => {
  it('pauses on ask_clarification; the answer becomes the result the next call reads', async () => {
    e2e.model.script(
      'clarify',
      {
        text: 'One question first.',
        toolCalls: [
          {
            id: 'call_ask',
            name: 'ask_clarification',
            arguments: { question: 'Which year?', options: ['2024', '2025'] },
          },
        ],
      },
      'Here is 2025.',
    );
    const turnId = await chat.open(`${tag('clarify')} show me the report`);
    const request = await pausedOn(turnId, 'clarification_request');
    expect(request).toMatchObject({
      callId: 'call_ask',
      question: 'Which year?',
      options: ['2024', '2025'],
      answer: null,
    });
    const messages = await chat.messages(turnId);
    expect(messages.at(-1)!.blocks.at(-1)!.id).toBe(request.id); // the last block while pending

    const res = await chat.api.post(`/v1/turns/${turnId}/requests/${request.id}`, { answer: '2025' });
    expect(res.status).toBe(202);
    expect((await chat.finished(turnId)).data.status).toBe('completed');
    const blocks = blocksOf(await chat.messages(turnId));
    expect(blocks.find((b) => b.kind === 'clarification_request')).toMatchObject({ answer: '2025' });
    expect(blocks.find((b) => b.kind === 'tool_result')).toMatchObject({ callId: 'call_ask', outcome: 'ok' });
    const tool = e2e.model.requestsFor('clarify')[1].body.messages.findLast((m: any) => m.role === 'tool');
    expect(tool).toMatchObject({ tool_call_id: 'call_ask' });
    expect(JSON.stringify(tool.content)).toContain('2025');
    expect(await chat.violations(turnId)).toEqual([]);
  });
});

describe('steering', () => {
  it('hands a message sent while the turn runs to that turn, which makes one more call to read it', async () => {
    e2e.model.script('steer', slowText(30, 20), 'Final answer, mentioning Mars.');
    const turnId = await chat.open(`${tag('steer')} tell me about planets`);
    await chat.event(turnId, 'text_delta');
    const steered = await chat.post({ text: 'also mention Mars' });
    expect(steered).toMatchObject({ status: 202, body: { turnId, steered: true } });
    const finish = await chat.finished(turnId);
    expect(finish.data.status).toBe('completed');

    const calls = e2e.model.requestsFor('steer');
    expect(calls).toHaveLength(2);
    expect(JSON.stringify(calls[0].body.messages)).not.toContain('also mention Mars');
    expect(JSON.stringify(calls[1].body.messages)).toContain('also mention Mars');

    const messages = await chat.messages(turnId);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(messages[2].blocks).toEqual([
      expect.objectContaining({ kind: 'text', text: 'also mention Mars', steering: true }),
    ]);
    expect(messages[3].blocks.at(-1)).toMatchObject({ kind: 'text', text: 'Final answer, mentioning Mars.' });
    const streamed = finishedBlocks(chat.events.ofTurn(turnId));
    for (const block of blocksOf(messages)) expect(streamed.get(block.id)).toEqual(block);
    expect(await chat.violations(turnId)).toEqual([]);
    // The steering message is part of the turn, not a new one.
    const conversation = await chat.api.get(`/v1/conversations/${chat.id}`);
    expect(conversation.body.turns.filter((t: { id: string }) => t.id === turnId)).toHaveLength(1);
  });
});

describe('cancel', () => {
  it('cuts a turn off mid-stream, keeping the text streamed so far', async () => {
    const full = slowText(200, 20);
    e2e.model.script('cancel', full);
    const turnId = await chat.open(`${tag('cancel')} write a long essay`);
    const first = await chat.event(turnId, 'text_delta');
    await chat.events.waitFor((e) => e.data.type === 'text_delta' && e.data.turnId === turnId, {
      from: chat.events.events.indexOf(first) + 1,
    });
    const res = await chat.api.post(`/v1/turns/${turnId}/cancel`);
    expect(res.status).toBe(202);
    const finish = await chat.finished(turnId, 5_000);
    expect(finish.data.status).toBe('cut_off');

    const turn = await chat.turn(turnId);
    expect(turn.status).toBe('cut_off');
    const blocks = blocksOf(await chat.messages(turnId));
    const kept = blocks.at(-1) as { kind: string; text: string; id: string };
    expect(kept.kind).toBe('text');
    expect(kept.text.length).toBeGreaterThan(0);
    expect(full.text.startsWith(kept.text)).toBe(true);
    expect(kept.text.length).toBeLessThan(full.text.length);
    const deltas = chat.events
      .ofTurn(turnId)
      .filter((e) => e.data.type === 'text_delta' && e.data.blockId === kept.id);
    expect(deltas.map((e) => e.data.text).join('')).toBe(kept.text);
    expect(await chat.violations(turnId)).toEqual([]);

    // The conversation goes on; the next call replays what the cut-off turn wrote.
    e2e.model.script('after-cancel', 'Short one.');
    const next = await chat.run(`${tag('after-cancel')} shorter please`);
    expect(next.finish.status).toBe('completed');
    expect(JSON.stringify(e2e.model.requestsFor('after-cancel')[0].body.messages)).toContain(kept.text);
  });
});

describe('reconnecting with Last-Event-ID', () => {
  it('replays what the client missed mid-turn, nothing twice and nothing lost', async () => {
    e2e.model.script('reconnect', slowText(40, 15));
    const url = `${e2e.portal.baseURL}/v1/conversations/${chat.id}/events`;
    const client = await subscribeEvents(url, E2E_KEYS.alice);
    const turnId = await chat.open(`${tag('reconnect')} stream to me`);
    const isDelta = (e: SseEvent) => e.data.type === 'text_delta' && e.data.turnId === turnId;
    await client.waitFor(isDelta);
    const firstPart = client.events.slice();
    client.close();
    await client.ended;
    // The turn goes on while the client is away: wait until the stream moved past it by a few deltas.
    const last = chat.events.events.findIndex((e) => e.id === firstPart.at(-1)!.id);
    for (let i = 0, from = last + 1; i < 3; i++) {
      const e = await chat.events.waitFor(isDelta, { from });
      from = chat.events.events.indexOf(e) + 1;
    }

    const resumed = await subscribeEvents(url, E2E_KEYS.alice, { lastEventId: firstPart.at(-1)!.id });
    await resumed.waitFor((e) => e.data.type === 'turn_finished' && e.data.turnId === turnId);
    resumed.close();
    await chat.finished(turnId);

    const seen = [...firstPart, ...resumed.events].filter((e) => e.data.turnId === turnId);
    const reference = chat.events.ofTurn(turnId);
    expect(seen.map((e) => e.id)).toEqual(reference.map((e) => e.id));
    expect(seen.map((e) => e.data)).toEqual(reference.map((e) => e.data));
    expect(new Set(seen.map((e) => e.id)).size).toBe(seen.length);
    // The deltas spell the stored answer.
    const answer = blocksOf(await chat.messages(turnId)).at(-1) as { id: string; text: string };
    const text = seen.filter((e) => e.data.type === 'text_delta' && e.data.blockId === answer.id);
    expect(text.map((e) => e.data.text).join('')).toBe(answer.text);
  });

  it('refuses a Last-Event-ID that is not an event id', async () => {
    const res = await fetch(`${e2e.portal.baseURL}/v1/conversations/${chat.id}/events`, {
      headers: { authorization: `Bearer ${E2E_KEYS.alice}`, 'last-event-id': 'nonsense' },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'validation_failed' } });
  });
});

describe('afterwards', () => {
  it('every turn of every conversation above keeps the six invariants (checkTurn on the API transcript)', async () => {
    expect(await e2e.violations()).toEqual([]);
  });
});
