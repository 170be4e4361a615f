import { randomBytes } from 'node:crypto';
import {
  ApiClient,
  E2EConversation,
  E2E_KEYS,
  e2eBootstrap,
  e2eModels,
  isSummaryRequest,
  isTitleRequest,
  memoryOf,
  contentText,
  summaryAnswer,
  SUMMARY_NOTE,
  startFakeOpenAI,
  startOtlpReceiver,
  startPortal,
  startToolServer,
  subscribeEvents,
  type FakeOpenAI,
  type FakeRequest,
  type OtlpReceiver,
  type ReceivedSpan,
  type RunningPortal,
  type ToolServer,
} from '@portal/testing';

/**
 * One turn is one trace (issue 28): every service runs as a real process exporting OTLP/JSON to a
 * receiver in this process; one turn with a tool call and an AUTO compaction must arrive as one
 * tree, from the gateway's POST through the orchestrator's job, its model and tool calls and the
 * compaction job it triggers, to the events it publishes, with no key, prompt, document or search
 * text in any attribute.
 */

jest.setTimeout(90_000);

const marker = () => randomBytes(6).toString('hex');
/** Words that must reach the model and the tools, but never a span. */
const SECRETS = {
  prompt: `PROMPT-${marker()}`,
  document: `DOCUMENT-${marker()}`,
  answer: `ANSWER-${marker()}`,
  search: `SEARCH-${marker()}`,
  apiKey: E2E_KEYS.alice,
};

/** Tool calls until the prompt crosses compactAt, then the answer once the summary is in. */
function respond(request: FakeRequest) {
  if (isTitleRequest(request)) return 'A title';
  if (isSummaryRequest(request)) return summaryAnswer(request);
  const memory = memoryOf(request);
  if (SUMMARY_NOTE.test(contentText(memory[0]?.content))) return `Done: ${SECRETS.answer}.`;
  return { toolCalls: [{ name: 'lookup', arguments: { query: `page ${memory.length}` } }] };
}

let fake: FakeOpenAI;
let tools: ToolServer;
let receiver: OtlpReceiver;
let portal: RunningPortal;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  fake = await startFakeOpenAI({ defaultResponder: respond });
  tools = await startToolServer();
  tools.respond(() => ({ body: { rows: `${SECRETS.document} revenue by quarter. `.repeat(60) } }));
  portal = await startPortal({
    models: {
      models: [
        {
          id: 'fast',
          model: 'fake-fast',
          baseURL: fake.baseURL,
          contextWindow: 8_000,
          compactAt: 0.5,
          reasoning: false,
          price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
        },
        // The bootstrap's `deep` agent names it; this test does not use it.
        { ...e2eModels(fake.baseURL).models[1] },
      ],
    },
    bootstrap: e2eBootstrap(tools.url),
    env: {
      PORTAL_TOOL_URL_ALLOW: `${tools.url}/`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // Exported within a tenth of a second, so the test waits for spans, not for batches.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
});

afterAll(async () => {
  await portal?.stop();
  await tools?.close();
  await fake?.close();
  await receiver?.close();
});

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

/** The spans of one trace whose parents all arrived: none left dangling but its root. */
function tree(spans: ReceivedSpan[], traceId: string) {
  const own = spans.filter((s) => s.traceId === traceId);
  const ids = new Set(own.map((s) => s.spanId));
  return { own, roots: own.filter((s) => !s.parentSpanId || !ids.has(s.parentSpanId)) };
}

describe('tracing end to end', () => {
  it('one turn with a tool call and an AUTO compaction is one trace, without a secret in it', async () => {
    const api = new ApiClient(portal.baseURL, E2E_KEYS.alice);
    const created = await api.post('/v1/conversations', { agentId: 'helper' });
    expect(created.status).toBe(201);
    const conversationId = created.body.id as string;
    const events = await subscribeEvents(
      `${portal.baseURL}/v1/conversations/${conversationId}/events`,
      E2E_KEYS.alice,
    );
    const chat = new E2EConversation(conversationId, api, events);
    try {
      const { turnId, finish, events: turnEvents } = await chat.run(`Read every page ${SECRETS.prompt}`);
      expect(finish.status).toBe('completed');
      expect(turnEvents.map((e) => e.data.type)).toContain('compaction_finished');
      expect((await api.get(`/v1/conversations?q=${SECRETS.search}`)).status).toBe(200);

      // The POST's server span roots the trace.
      const post = await receiver
        .waitFor((spans) =>
          spans.some(
            (s) => s.service === 'gateway' && s.attributes['http.route'] === '/v1/conversations/:id/messages',
          ),
        )
        .then((spans) =>
          spans.find(
            (s) =>
              s.kind === 2 && s.attributes['url.path'] === `/v1/conversations/${conversationId}/messages`,
          ),
        );
      expect(post).toMatchObject({
        service: 'gateway',
        name: 'POST /v1/conversations/:id/messages',
        parentSpanId: '',
      });
      const traceId = post!.traceId;

      // Wait until the whole turn is in, each span under its parent.
      const expected: [string, string][] = [
        ['gateway', 'add turns.run-turn'],
        ['turn-orchestrator', 'process turns'],
        ['turn-orchestrator', 'prompt.assemble'],
        ['turn-orchestrator', 'model.call'],
        ['turn-orchestrator', 'tool.call'],
        ['turn-orchestrator', 'add compactions.compact'],
        ['turn-orchestrator', 'events.publish'],
        ['compaction-worker', 'process compactions'],
        ['compaction-worker', 'compaction'],
        ['compaction-worker', 'model.call'],
      ];
      const spans = await receiver.waitFor((all) => {
        const { own, roots } = tree(all, traceId);
        const answered = own.some(
          (s) => s.name === 'model.call' && s.attributes['portal.model.kind'] === 'turn',
        );
        return (
          roots.length === 1 &&
          answered &&
          expected.every(([service, name]) => own.some((s) => s.service === service && s.name === name))
        );
      });
      const { own, roots } = tree(spans, traceId);
      expect(roots.map((s) => s.spanId)).toEqual([post!.spanId]);

      // The queue carried the context: the orchestrator's job is a child of the gateway's add.
      const add = own.find((s) => s.name === 'add turns.run-turn')!;
      const run = own.find((s) => s.name === 'process turns' && s.parentSpanId === add.spanId);
      expect(run).toBeDefined();
      const compactionJob = own.find((s) => s.name === 'process compactions')!;
      const compactionAdd = own.find((s) => s.spanId === compactionJob.parentSpanId)!;
      expect(compactionAdd).toMatchObject({ name: 'add compactions.compact', service: 'turn-orchestrator' });

      // Our own spans with their counts.
      const calls = byName(own, 'model.call');
      expect(calls.map((c) => c.attributes['portal.model.kind'])).toEqual(
        expect.arrayContaining(['turn', 'compaction']),
      );
      for (const call of calls) {
        expect(call.attributes).toMatchObject({
          'gen_ai.request.model': 'fast',
          'gen_ai.usage.input_tokens': expect.any(Number),
          'gen_ai.usage.output_tokens': expect.any(Number),
          'portal.model.time_to_first_token_ms': expect.any(Number),
        });
      }
      const prompts = byName(own, 'prompt.assemble');
      expect(prompts.every((p) => (p.attributes['portal.prompt.tokens'] as number) > 0)).toBe(true);
      expect(byName(own, 'tool.call')[0].attributes).toMatchObject({
        'portal.tool.name': 'lookup',
        'portal.tool.outcome': 'ok',
      });
      expect(byName(own, 'compaction')[0].attributes).toMatchObject({ 'portal.compaction.trigger': 'AUTO' });

      // The instrumentations' spans are in the tree too: SQL and Redis under the turn's job.
      expect(
        own.some(
          (s) =>
            s.attributes['db.system.name'] === 'postgresql' || s.attributes['db.system'] === 'postgresql',
        ),
      ).toBe(true);
      expect(
        own.some((s) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis'),
      ).toBe(true);

      // The gateway's SSE sends are spans of the subscription, linked to the publications.
      const published = new Set(byName(own, 'events.publish').map((s) => s.spanId));
      await receiver.waitFor((all) =>
        byName(all, 'sse.send').some((s) =>
          s.links.some((l) => l.traceId === traceId && published.has(l.spanId)),
        ),
      );

      // Log lines of the turn's job carry its trace.
      const lines = portal.logs['turn-orchestrator']
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('{') && line.includes(turnId))
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.some((line) => line['trace_id'] === traceId && typeof line['span_id'] === 'string')).toBe(
        true,
      );

      // No key, prompt, document, answer or search words in any attribute of any span.
      const everything = JSON.stringify(receiver.spans.map((s) => [s.name, s.attributes]));
      for (const secret of Object.values(SECRETS)) expect(everything).not.toContain(secret);
      expect(receiver.contentTypes.every((type) => type.includes('application/json'))).toBe(true);
    } finally {
      chat.close();
    }
  });
});
