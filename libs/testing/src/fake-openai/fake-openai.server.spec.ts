import OpenAI from 'openai';
import {
  classifyModelError,
  ModelClientFactory,
  type ModelEntry,
  type ModelStreamEvent,
  type StreamChatOptions,
  type StreamResult,
} from '@portal/model';
import { fakeContextOverflow, fakeError, startFakeOpenAI, type FakeOpenAI } from './fake-openai.server';

let fake: FakeOpenAI;
let factory: ModelClientFactory;
let entry: ModelEntry;

beforeEach(async () => {
  fake = await startFakeOpenAI();
  factory = new ModelClientFactory({ env: { FAKE_KEY: 'sk-fake' }, timeoutMs: 300, idleTimeoutMs: 300 });
  entry = {
    id: 'fake',
    model: 'fake-model',
    baseURL: fake.baseURL,
    apiKeyEnv: 'FAKE_KEY',
    contextWindow: 128000,
    vision: null,
    reasoning: true,
    price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
  };
});
afterEach(async () => {
  await factory.close();
  await fake.close();
});

const hello = { messages: [{ role: 'user' as const, content: 'hello' }] };

async function run(options: StreamChatOptions = {}, target = entry) {
  const events: ModelStreamEvent[] = [];
  for await (const event of factory.streamChat(target, hello, options)) events.push(event);
  const done = events.at(-1);
  if (done?.type !== 'done') throw new Error('no result');
  return { events, result: done.result as StreamResult };
}

async function failure(options: StreamChatOptions = {}) {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const event of factory.streamChat(entry, hello, options)) events.push(event);
  } catch (err) {
    return { events, error: classifyModelError(err) };
  }
  throw new Error('expected the call to fail');
}

describe('fake OpenAI server through the model client', () => {
  it('streams a text answer in the chunks asked for, with usage numbers', async () => {
    fake.enqueue({
      text: 'Hello world!',
      chunkSize: 5,
      usage: { prompt_tokens: 100, completion_tokens: 4, cached_tokens: 60 },
    });
    const { events, result } = await run();
    expect(events.filter((e) => e.type === 'text')).toEqual([
      { type: 'text', text: 'Hello' },
      { type: 'text', text: ' worl' },
      { type: 'text', text: 'd!' },
    ]);
    expect(result).toMatchObject({
      text: 'Hello world!',
      finishReason: 'stop',
      usage: { inputTokens: 100, outputTokens: 4, cachedTokens: 60 },
    });
  });

  it('streams reasoning under either field, then text', async () => {
    fake.enqueue({ reasoning: 'Let me think.', text: 'Answer.' });
    fake.enqueue({ reasoning: 'Other field.', reasoningField: 'reasoning', text: 'Answer.' });
    expect((await run()).result.thinking).toBe('Let me think.');
    const { events, result } = await run();
    expect(result.thinking).toBe('Other field.');
    expect(events[0]).toEqual({ type: 'thinking', text: 'Other ' });
  });

  it('streams several tool calls with their arguments in fragments, and malformed ones as sent', async () => {
    fake.enqueue({
      text: 'Looking.',
      toolCalls: [
        { name: 'search_attachments', arguments: { query: 'Q3 revenue', attachment_ids: ['a1'] } },
        { id: 'bad', name: 'read_document', arguments: '{"attachment_id": "a1", "page":' },
      ],
      chunkSize: 7,
    });
    const { events, result } = await run();
    expect(events.filter((e) => e.type === 'tool_call_started')).toEqual([
      { type: 'tool_call_started', index: 0, callId: 'call_1', name: 'search_attachments' },
      { type: 'tool_call_started', index: 1, callId: 'bad', name: 'read_document' },
    ]);
    expect(events.filter((e) => e.type === 'tool_call_args').length).toBeGreaterThan(4);
    expect(result.toolCalls).toEqual([
      {
        callId: 'call_1',
        name: 'search_attachments',
        arguments: '{"query":"Q3 revenue","attachment_ids":["a1"]}',
      },
      { callId: 'bad', name: 'read_document', arguments: '{"attachment_id": "a1", "page":' },
    ]);
    expect(result.finishReason).toBe('tool_calls');
  });

  it('sends the entry model, usage option and effort only to a reasoning model', async () => {
    await run({ effort: 'low' });
    await run({ effort: 'low' }, { ...entry, id: 'plain', reasoning: false });
    const [reasoning, plain] = fake.requests;
    expect(reasoning.body).toMatchObject({
      model: 'fake-model',
      stream: true,
      stream_options: { include_usage: true },
      reasoning_effort: 'low',
      messages: hello.messages,
    });
    expect(plain.body.reasoning_effort).toBeUndefined();
    expect(reasoning.headers.authorization).toBe('Bearer sk-fake');
    expect(reasoning.path).toBe('/v1/chat/completions');
  });

  it('classifies 429 with retry-after as rate_limited, without retrying', async () => {
    fake.enqueue(fakeError(429, 'Rate limit reached', { headers: { 'retry-after': '3' } }));
    const { error } = await failure();
    expect(error).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterMs: 3000 });
    expect(fake.requests).toHaveLength(1);
  });

  it('classifies 500 as server and a context overflow as context_overflow', async () => {
    fake.enqueue({ kind: 'error', status: 500, body: 'oops' }, fakeContextOverflow());
    expect((await failure()).error).toMatchObject({ kind: 'server', status: 500 });
    expect((await failure()).error).toMatchObject({ kind: 'context_overflow', status: 400 });
  });

  it('classifies a stream broken mid-answer as broken_stream, after the deltas that arrived', async () => {
    fake.enqueue({ text: 'one two three four five', breakAfterChunks: 3 });
    const { events, error } = await failure();
    expect(error.kind).toBe('broken_stream');
    expect(events).toEqual([
      { type: 'text', text: 'one ' },
      { type: 'text', text: 'two ' },
    ]);
  });

  it('classifies a stream that ends without a finish reason as broken_stream', async () => {
    fake.enqueue({ text: 'cut', finishReason: null });
    expect((await failure()).error.kind).toBe('broken_stream');
  });

  it('classifies a hang as timeout', async () => {
    fake.enqueue({ kind: 'hang' });
    expect((await failure()).error.kind).toBe('timeout');
  });

  it('classifies a stream that falls silent as timeout', async () => {
    fake.enqueue({ text: 'slow words here', delayMs: 1000 });
    expect((await failure()).error.kind).toBe('timeout');
  });

  it('classifies a cancelled call as aborted', async () => {
    fake.enqueue({ text: 'a b c d e f', delayMs: 50 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 120);
    expect((await failure({ signal: controller.signal })).error.kind).toBe('aborted');
  });
});

describe('fake OpenAI server', () => {
  it('answers without streaming and records every request', async () => {
    fake.enqueue({ text: 'Plain.', reasoning: 'Hmm.', toolCalls: [{ name: 'x', arguments: {} }] });
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'k', maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'm', messages: hello.messages });
    const message = completion.choices[0].message as OpenAI.ChatCompletionMessage & {
      reasoning_content?: string;
    };
    expect(message.content).toBe('Plain.');
    expect(message.reasoning_content).toBe('Hmm.');
    expect(message.tool_calls?.[0]).toMatchObject({ id: 'call_1', function: { name: 'x', arguments: '{}' } });
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);

    await fetch(`${fake.baseURL}/models`);
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /v1/chat/completions',
      'GET /v1/models',
    ]);
    expect(fake.requests[0].headers['content-type']).toBe('application/json');
  });

  it('uses the queue first, then the default responder, which sees the request', async () => {
    fake.setDefault((request) => `You sent ${request.body.messages.length} message(s).`);
    fake.enqueue('first', (request) => ({ text: `second for ${request.body.model}` }));
    expect(fake.pending()).toBe(2);
    const texts: string[] = [];
    for (let i = 0; i < 3; i++) texts.push((await run()).result.text);
    expect(texts).toEqual(['first', 'second for fake-model', 'You sent 1 message(s).']);
  });

  it('sends no usage when told so, and none unless the request asks', async () => {
    fake.enqueue({ text: 'a', usage: null });
    expect((await run()).result.usage).toBeNull();
    const client = new OpenAI({ baseURL: fake.baseURL, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: hello.messages,
      stream: true,
    });
    for await (const chunk of stream) expect(chunk.usage).toBeUndefined();
  });

  it('waits for requests', async () => {
    const waiting = fake.waitForRequests(2, 2000);
    const runs = [run(), run()];
    expect(await waiting).toHaveLength(2);
    await Promise.all(runs);
    await expect(fake.waitForRequests(5, 50)).rejects.toThrow(/waited 50 ms for 5 requests, got 2/);
  });
});
