import {
  E2EConversation,
  E2E_KEYS,
  compactingModels,
  contentText,
  e2eBootstrap,
  fakeContextOverflow,
  isSummaryRequest,
  memoryOf,
  openConversation,
  summaryAnswer,
  isTitleRequest,
  SUMMARY_NOTE,
  startFakeOpenAI,
  startPortal,
  startToolServer,
  type FakeOpenAI,
  type FakeRequest,
  type FakeScript,
  type RunningPortal,
  type ToolServer,
} from '@portal/testing';

/**
 * Compaction end to end (SPEC 5): every service running as a real process, the fake model with a
 * small context window and its own `compactAt` in the catalogue. Each test keys its conversation's
 * model calls by a `[k:<key>]` marker in its messages and answers them with a handler of its own.
 */

jest.setTimeout(90_000);

type Handler = (request: FakeRequest) => FakeScript | Promise<FakeScript>;

let fake: FakeOpenAI;
let tools: ToolServer;
let portal: RunningPortal;
const handlers = new Map<string, Handler>();
/** Every chat request routed to a key, in order (summary calls included). */
const routed = new Map<string, FakeRequest[]>();
const conversations: E2EConversation[] = [];

const tag = (key: string) => `[k:${key}]`;

async function route(request: FakeRequest): Promise<FakeScript> {
  if (isTitleRequest(request)) return 'A title';
  const keys = [...JSON.stringify(request.body?.messages ?? []).matchAll(/\[k:([\w-]+)\]/g)].map((m) => m[1]);
  const key = keys.at(-1);
  if (key === undefined) return 'Fake answer.';
  routed.set(key, [...(routed.get(key) ?? []), request]);
  const handler = handlers.get(key);
  if (isSummaryRequest(request)) return summaryAnswer(request);
  return handler ? handler(request) : 'Fake answer.';
}

async function conversation(key: string, handler: Handler): Promise<E2EConversation> {
  handlers.set(key, handler);
  const chat = await openConversation(portal.baseURL);
  conversations.push(chat);
  return chat;
}

const requestsOf = (key: string) => routed.get(key) ?? [];
const turnRequestsOf = (key: string) => requestsOf(key).filter((r) => !isSummaryRequest(r));

beforeAll(async () => {
  fake = await startFakeOpenAI({ defaultResponder: route });
  tools = await startToolServer();
  tools.respond((r) => ({
    body: { tool: r.path.slice(1), rows: 'Revenue by quarter and region, with notes. '.repeat(70) },
  }));
  portal = await startPortal({
    models: compactingModels(fake.baseURL),
    bootstrap: e2eBootstrap(tools.url),
    env: { PORTAL_TOOL_URL_ALLOW: `${tools.url}/` },
  });
});

afterAll(async () => {
  for (const c of conversations) c.close();
  await portal?.stop();
  await tools?.close();
  await fake?.close();
});

describe('compaction end to end', () => {
  it('/compact over HTTP: 202, its events, the transcript, and the next turn replays the summary first', async () => {
    let calls = 0;
    const chat = await conversation('manual', () =>
      ++calls === 1
        ? { toolCalls: [{ name: 'lookup', arguments: { query: 'Q3 revenue' } }] }
        : 'Q3 revenue was $4.2M.',
    );
    const first = await chat.run(`Look the figures up ${tag('manual')}`);
    expect(first.finish.status).toBe('completed');

    const posted = await chat.post({ text: '/compact keep the figures' });
    expect(posted.status).toBe(202);
    expect(posted.body).toMatchObject({ kind: 'compaction', turnId: expect.any(String) });
    const turnId = posted.body.turnId as string;
    await chat.event(turnId, 'compaction_started');
    const finished = await chat.event(turnId, 'compaction_finished');
    expect(finished.data.block).toMatchObject({ kind: 'compaction', trigger: 'MANUAL' });
    expect((await chat.finished(turnId)).data.status).toBe('completed');
    // People get the summary without references on the stream too (SPEC 5.2).
    expect(finished.data.block.summary).toMatch(/^Summary of turns 1–1/);
    expect(finished.data.block.summary).not.toContain('ref:');

    // The summary call offered no tools, and the transcript shows the summary without references.
    const summaryCall = requestsOf('manual').find(isSummaryRequest);
    expect(summaryCall?.body.tools).toBeUndefined();
    expect(JSON.stringify(summaryCall?.body.messages)).toMatch(/\(ref:[A-Za-z0-9_-]+\)/);
    const assistant = (await chat.messages(turnId)).filter((m) => m.role === 'assistant');
    const blocks = assistant.flatMap((m) => m.blocks) as any[];
    expect(blocks.map((b) => b.kind)).toEqual(['compaction', 'text']);
    expect(blocks[0].summary).toMatch(/^Summary of turns 1–1/);
    expect(blocks[0].summary).toContain('Q3 revenue was $4.2M');
    expect(blocks[0].summary).not.toContain('ref:');
    expect(blocks[1].text).toBe('Context summarised: turns 1–1.');
    expect(await chat.violations(turnId)).toEqual([]);

    // A later turn: its model request opens its memory with the summary under its note, refs kept.
    const before = turnRequestsOf('manual').length;
    const later = await chat.run(`And now? ${tag('manual')}`);
    expect(later.finish.status).toBe('completed');
    const request = turnRequestsOf('manual')[before];
    const memory = memoryOf(request);
    expect(contentText(memory[0].content)).toMatch(SUMMARY_NOTE);
    expect(contentText(memory[0].content)).toMatch(/ref:[A-Za-z0-9_-]+/);
    expect(JSON.stringify(memory)).not.toContain('Context summarised');
  });

  it('a /compact turn streams the turn events any turn does: started, each state, finished', async () => {
    const chat = await conversation('lifecycle', () => 'Noted.');
    expect((await chat.run(`Note the figures ${tag('lifecycle')}`)).finish.status).toBe('completed');
    const turnId = await chat.open('/compact');
    await chat.finished(turnId);
    const lifecycle = chat.events
      .ofTurn(turnId)
      .map((e) => e.data)
      .filter((d) => ['turn_started', 'turn_state', 'turn_finished'].includes(d.type))
      .map((d) => (d.status ? `${d.type} ${d.status}` : d.type));
    expect(lifecycle).toEqual([
      'turn_started',
      'turn_state queued',
      'turn_state running',
      'turn_state completed',
      'turn_finished completed',
    ]);
  });

  it('refuses /compact with 409 compact_refused: turn open, nothing written, attachments', async () => {
    const chat = await conversation('refusals', () => ({
      text: 'A slow answer in several small parts.',
      chunkSize: 4,
      delayMs: 60,
    }));
    const running = await chat.open(`Talk a while ${tag('refusals')}`);
    const open = await chat.post({ text: '/compact' });
    expect(open.status).toBe(409);
    expect(open.body.error).toMatchObject({ code: 'compact_refused' });
    expect(open.body.error.message).toMatch(/latest turn is (queued|running)/);
    expect((await chat.finished(running)).data.status).toBe('completed');

    // Attachments: a file uploaded to the conversation, then `/compact` carrying it.
    const form = new FormData();
    form.append('conversationId', chat.id);
    form.append('file', new Blob(['Some notes.\n']), 'notes.txt');
    const uploaded = await fetch(`${portal.baseURL}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${E2E_KEYS.alice}` },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    const attachmentId = ((await uploaded.json()) as { id: string }).id;
    const withFile = await chat.post({ text: '/compact', attachmentIds: [attachmentId] });
    expect(withFile.status).toBe(409);
    expect(withFile.body.error).toMatchObject({
      code: 'compact_refused',
      message: expect.stringMatching(/attachments/),
    });

    // Nothing written since the last compaction.
    const compacted = await chat.post({ text: '/compact' });
    expect(compacted.status).toBe(202);
    expect((await chat.finished(compacted.body.turnId)).data.status).toBe('completed');
    const again = await chat.post({ text: '/compact' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: 'compact_refused',
      message: expect.stringMatching(/nothing has been written/),
    });
  });

  it('compacts mid-turn when the projected input crosses compactAt; the next call gets summary + tail', async () => {
    const chat = await conversation('auto', (request) => {
      const memory = memoryOf(request);
      if (SUMMARY_NOTE.test(contentText(memory[0]?.content))) return 'Done after the summary.';
      return { toolCalls: [{ name: 'lookup', arguments: { query: `page ${memory.length}` } }] };
    });
    const { turnId, finish, events } = await chat.run(`Read every page ${tag('auto')}`);
    expect(finish).toMatchObject({ status: 'completed' });
    expect(events.map((e) => e.data.type)).toEqual(
      expect.arrayContaining(['compaction_started', 'compaction_finished']),
    );
    const block = events.find((e) => e.data.type === 'compaction_finished')?.data.block;
    expect(block).toMatchObject({ kind: 'compaction', trigger: 'AUTO' });

    const all = requestsOf('auto');
    const at = all.findIndex(isSummaryRequest);
    expect(at).toBeGreaterThan(1); // a few calls grew the input first
    const before = memoryOf(all[at - 1]);
    const after = memoryOf(all[at + 1]);
    expect(SUMMARY_NOTE.test(contentText(before[0].content))).toBe(false);
    expect(contentText(after[0].content)).toMatch(SUMMARY_NOTE);
    // The summary, then the tail: at least TAIL_MESSAGES (4) verbatim, fewer than before.
    expect(after.length).toBeGreaterThanOrEqual(5);
    expect(after.length).toBeLessThan(before.length + 1);
    expect(after[1].role).not.toBe('tool'); // the tail never opens on a tool result
    const tail = after.slice(1).map((m) => JSON.stringify(m));
    const previous = before.map((m) => JSON.stringify(m));
    for (const m of tail.slice(0, -2)) expect(previous).toContain(m);
    expect(await chat.violations(turnId)).toEqual([]);
  });

  it('a context overflow compacts and retries the call once', async () => {
    let calls = 0;
    const chat = await conversation('overflow', () => (++calls === 1 ? fakeContextOverflow() : 'Recovered.'));
    const { turnId, finish, events } = await chat.run(`Go ${tag('overflow')}`);
    expect(finish).toMatchObject({ status: 'completed' });
    expect(events.some((e) => e.data.type === 'compaction_finished')).toBe(true);
    const kinds = requestsOf('overflow').map((r) => (isSummaryRequest(r) ? 'summary' : 'turn'));
    expect(kinds).toEqual(['turn', 'summary', 'turn']);
    expect(contentText(memoryOf(requestsOf('overflow')[2])[0].content)).toMatch(SUMMARY_NOTE);
    const texts = (await chat.messages(turnId)).flatMap((m) => m.blocks as any[]).map((b) => b.text);
    expect(texts).toContain('Recovered.');
  });

  it('a second overflow right after the compaction fails the turn with its reason', async () => {
    const chat = await conversation('overflow-twice', () => fakeContextOverflow());
    const { turnId, finish } = await chat.run(`Go ${tag('overflow-twice')}`);
    expect(finish).toMatchObject({ status: 'failed', error: 'context_overflow_after_compaction' });
    expect((await chat.turn(turnId)).error).toBe('context_overflow_after_compaction');
    const kinds = requestsOf('overflow-twice').map((r) => (isSummaryRequest(r) ? 'summary' : 'turn'));
    expect(kinds).toEqual(['turn', 'summary', 'turn']);
  });
});
