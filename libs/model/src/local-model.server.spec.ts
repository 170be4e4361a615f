import OpenAI from 'openai';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { LOCAL_MODEL } from './catalogue';
import { argumentsFor, startLocalModelServer, type LocalModelServer } from './local-model.server';
import { ModelClientFactory, type ModelStreamEvent } from './model-client';
import { classifyModelError } from './stream-adapter';

const searchTool: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'search_attachments',
    description: 'Search',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, attachment_ids: { type: 'array', items: { type: 'string' } } },
      required: ['query'],
    },
  },
};
const loadSkill: ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'load_skill',
    parameters: { type: 'object', properties: { slug: { type: 'string' } }, required: ['slug'] },
  },
};

let server: LocalModelServer;
let client: OpenAI;
beforeAll(async () => {
  server = await startLocalModelServer();
  client = new OpenAI({ baseURL: server.baseURL, apiKey: 'none', maxRetries: 0 });
});
afterAll(() => server.close());

async function collect(events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}

describe('local model server over the openai SDK', () => {
  it('streams an echo that says it is the built-in local model, with usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'portal-local',
      messages: [{ role: 'user', content: 'Find the Q3 revenue in the report.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let pieces = 0;
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        text += content;
        pieces++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('[portal-local model] Echo of your message: "Find the Q3 revenue in the report."');
    expect(pieces).toBeGreaterThan(5);
    expect(finish).toBe('stop');
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBe(Math.ceil(text.length / 4));
  });

  it('answers the same way without streaming', async () => {
    const completion = await client.chat.completions.create({
      model: 'portal-local',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
    });
    expect(completion.choices[0].message.content).toBe(
      '[portal-local model] Echo of your message: "hello there"',
    );
    expect(completion.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('calls an offered tool when told to, then reports its result', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Please call tool search_attachments Q3 revenue.' },
    ];
    const first = await client.chat.completions.create({
      model: 'm',
      messages,
      tools: [searchTool, loadSkill],
    });
    const message = first.choices[0].message;
    expect(first.choices[0].finish_reason).toBe('tool_calls');
    expect(message.content).toBe('[portal-local model] Calling search_attachments.');
    expect(message.tool_calls).toEqual([
      {
        id: 'call_local_1',
        type: 'function',
        function: { name: 'search_attachments', arguments: '{"query":"Q3 revenue"}' },
      },
    ]);

    messages.push(message, { role: 'tool', tool_call_id: 'call_local_1', content: 'Q3 revenue was $4.2M' });
    const second = await client.chat.completions.create({
      model: 'm',
      messages,
      tools: [searchTool, loadSkill],
    });
    expect(second.choices[0].message.content).toBe(
      '[portal-local model] The tool search_attachments answered: "Q3 revenue was $4.2M".',
    );
    expect(second.choices[0].message.tool_calls).toBeUndefined();
  });

  it('does not call a tool that is not offered', async () => {
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'use load_skill fact-check' }],
      tools: [searchTool],
    });
    expect(completion.choices[0].message.tool_calls).toBeUndefined();
  });

  it('counts a picture at a fixed estimate, not by its data URL', async () => {
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${'A'.repeat(2_000_000)}` } },
          ],
        },
      ],
    });
    expect(completion.choices[0].message.content).toBe(
      '[portal-local model] Echo of your message (with 1 picture): "What is this?"',
    );
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(1000);
    expect(completion.usage?.prompt_tokens).toBeLessThan(1100);
  });

  it('writes a summary when the system prompt asks for one', async () => {
    const completion = await client.chat.completions.create({
      model: 'm',
      messages: [
        { role: 'system', content: 'Summarise the conversation. Open with "Summary of turns 1–7".' },
        { role: 'user', content: 'Find the Q3 revenue.' },
      ],
    });
    const text = completion.choices[0].message.content ?? '';
    expect(text.startsWith('Summary of turns 1–7')).toBe(true);
    expect(text).toContain('## Requests\n- "Find the Q3 revenue."');
  });

  it('refuses a request larger than its context window as an overflow', async () => {
    const small = await startLocalModelServer({ contextWindow: 10 });
    try {
      const tiny = new OpenAI({ baseURL: small.baseURL, apiKey: 'none', maxRetries: 0 });
      const err = await tiny.chat.completions
        .create({ model: 'm', messages: [{ role: 'user', content: 'x'.repeat(200) }] })
        .catch((e: unknown) => e);
      expect(classifyModelError(err).kind).toBe('context_overflow');
    } finally {
      await small.close();
    }
  });
});

describe('ModelClientFactory with the built-in local model', () => {
  const factory = new ModelClientFactory({ env: {} });
  afterAll(() => factory.close());

  it('starts the server lazily and streams reasoning when an effort is sent', async () => {
    const events = await collect(
      factory.streamChat(LOCAL_MODEL, { messages: [{ role: 'user', content: 'hi' }] }, { effort: 'high' }),
    );
    const thinking = events.filter((e) => e.type === 'thinking').map((e) => (e as { text: string }).text);
    expect(thinking.join('')).toBe(
      '[portal-local model] Thinking at high effort about "hi": I will echo the message.',
    );
    const done = events.at(-1);
    expect(done?.type).toBe('done');
    if (done?.type !== 'done') return;
    expect(done.result.text).toContain('Echo of your message: "hi"');
    expect(done.result.usage).toMatchObject({ cachedTokens: 0 });
    expect(await factory.client(LOCAL_MODEL)).toBe(await factory.client(LOCAL_MODEL));
  });

  it('sends no effort to a model that does not reason', async () => {
    const entry = { ...LOCAL_MODEL, id: 'plain-local', reasoning: false };
    const events = await collect(
      factory.streamChat(entry, { messages: [{ role: 'user', content: 'hi' }] }, { effort: 'high' }),
    );
    expect(events.some((e) => e.type === 'thinking')).toBe(false);
  });

  it('streams a tool call as deltas', async () => {
    const events = await collect(
      factory.streamChat(LOCAL_MODEL, {
        messages: [
          { role: 'user', content: 'call tool load_skill fact-check and use search_attachments query="Q3"' },
        ],
        tools: [searchTool, loadSkill],
      }),
    );
    expect(events.filter((e) => e.type === 'tool_call_started')).toEqual([
      { type: 'tool_call_started', index: 0, callId: 'call_local_1', name: 'load_skill' },
      { type: 'tool_call_started', index: 1, callId: 'call_local_2', name: 'search_attachments' },
    ]);
    const done = events.at(-1);
    if (done?.type !== 'done') throw new Error('no result');
    expect(done.result.toolCalls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['load_skill', { slug: 'fact-check' }],
      ['search_attachments', { query: 'Q3' }],
    ]);
    expect(done.result.finishReason).toBe('tool_calls');
  });
});

describe('argumentsFor', () => {
  const schema = {
    type: 'object',
    properties: {
      attachment_id: { type: 'string' },
      page: { type: 'integer', minimum: 1 },
      mode: { type: 'string', enum: ['fast', 'slow'] },
      strict: { type: 'boolean' },
      note: { type: 'string' },
    },
    required: ['attachment_id', 'page', 'mode', 'strict'],
  };

  it('takes key=value pairs, typed by the schema, and fills the other required fields', () => {
    expect(argumentsFor(' attachment_id=att_1 page=3 note="a b"', schema)).toEqual({
      attachment_id: 'att_1',
      page: 3,
      note: 'a b',
      mode: 'fast',
      strict: true,
    });
  });

  it('gives the remaining words to the first required string', () => {
    expect(argumentsFor(' with report.pdf.', schema)).toEqual({
      attachment_id: 'report.pdf',
      page: 1,
      mode: 'fast',
      strict: true,
    });
    expect(argumentsFor('', schema)).toMatchObject({ attachment_id: 'example' });
  });
});
