import { startE2EPortal, startFakeOpenAI, type E2EPortal, type FakeOpenAI } from '@portal/testing';

/**
 * End to end over HTTP: the preview of a conversation against the prompt the next model call
 * actually receives, as the fake model recorded it.
 */
let fake: FakeOpenAI;
let e2e: E2EPortal;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  e2e = await startE2EPortal(fake);
}, 60_000);

afterAll(async () => {
  await e2e?.stop();
  await fake?.close();
});

const tag = (key: string) => e2e.model.tag(key);

interface PreviewLayer {
  layer: string;
  tokens: number;
  messages: unknown[];
}

describe('GET /v1/conversations/:id/prompt-preview', () => {
  it('equals, layer by layer, what the next model call reads before its new message', async () => {
    const alice = e2e.api('alice');
    // Bound out of slug order (draft is unpublished): a turn's catalogue keeps the bind order.
    const created = await alice.post('/v1/agents', {
      id: 'previewed',
      name: 'Previewed',
      instructions: 'Answer in one line.',
      model: 'fast',
      skills: ['style-guide', 'draft', 'fact-check'],
      tools: [
        {
          name: 'lookup',
          description: 'Looks a query up.',
          parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
          url: `${e2e.tools.url}/lookup`,
        },
      ],
    });
    expect(created.status).toBe(201);
    const chat = await e2e.conversation('alice', 'previewed');

    // Turn 1 leaves a tool call, its result and an answer in memory.
    e2e.tools.respond(() => ({ body: { found: 'Hanoi has about 8.4 million people.' } }));
    e2e.model.script(
      'first',
      { text: 'Looking.', toolCalls: [{ id: 'call_pop', name: 'lookup', arguments: { query: 'Hanoi' } }] },
      'About 8.4 million.',
    );
    expect((await chat.run(`${tag('first')} How many people live in Hanoi?`)).finish.status).toBe(
      'completed',
    );

    const preview = await alice.get(`/v1/conversations/${chat.id}/prompt-preview`);
    expect(preview.status).toBe(200);
    const layers = preview.body.layers as PreviewLayer[];
    expect(layers.map((l) => l.layer)).toEqual(['portal_floor', 'author', 'catalogue', 'memory']);

    e2e.model.script('second', 'About 8.4 million, still.');
    const second = await chat.run(`${tag('second')} And now?`);
    expect(second.finish.status).toBe('completed');
    const [request] = e2e.model.requestsFor('second');
    const sent = request.body.messages as unknown[];
    expect(sent.at(-1)).toEqual({ role: 'user', content: `${tag('second')} And now?` });

    let at = 0;
    for (const layer of layers) {
      expect({ layer: layer.layer, messages: sent.slice(at, at + layer.messages.length) }).toEqual({
        layer: layer.layer,
        messages: layer.messages,
      });
      at += layer.messages.length;
    }
    expect(at).toBe(sent.length - 1);

    const catalogue = layers.find((l) => l.layer === 'catalogue')!.messages[0] as { content: string };
    expect(catalogue.content.indexOf('style-guide —')).toBeLessThan(
      catalogue.content.indexOf('fact-check —'),
    );
    const memory = layers.find((l) => l.layer === 'memory')!.messages;
    expect(memory).toContainEqual(expect.objectContaining({ role: 'tool', tool_call_id: 'call_pop' }));
  }, 60_000); // two turns, one of them with a tool call
});
