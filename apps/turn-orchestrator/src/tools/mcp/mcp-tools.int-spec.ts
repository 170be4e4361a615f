import { createServer } from 'node:net';
import {
  AgentRepository,
  CallInputRepository,
  ConversationRepository,
  OrgRepository,
  TurnRepository,
  UserRepository,
  type AgentMcpServer,
} from '@portal/dal';
import { AgentId, type ApprovalRequestBlock, checkTurn, OrgId, UserId } from '@portal/domain';
import { PortalMetrics } from '@portal/observability';
import { MCP_REPORT_TEXT, startMcpTestServer, type McpTestServer } from '@portal/testing';
import { ORG, startHarness, transcriptOf, type Harness } from '../../../test/turn.harness';
import { TurnRunner } from '../../turn/turn-runner.service';

let mcp: McpTestServer;
let deadUrl: string;
let h: Harness;

/** A local port where nothing listens. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const tickets = (over: Partial<AgentMcpServer> = {}): AgentMcpServer => ({
  name: 'tickets',
  url: mcp.url,
  headersFromEnv: { Authorization: 'MCP_TEST_TICKETS_AUTH' },
  tools: ['lookup', 'delete_ticket', 'broken', 'hang', 'report', 'big', 'picture'],
  requiresApproval: ['delete_ticket'],
  ...over,
});

async function setServers(agentId: string, mcpServers: AgentMcpServer[], org = ORG) {
  await new AgentRepository(h.db.dataSource).upsert(org, {
    id: AgentId(agentId),
    name: agentId,
    instructions: 'Help with tickets.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [],
    mcpServers,
    reviewer: null,
    compactionGuidance: null,
  });
}

beforeAll(async () => {
  mcp = await startMcpTestServer({ bigChars: 50_000 });
  deadUrl = `http://127.0.0.1:${await freePort()}/mcp`;
  process.env['MCP_TEST_TICKETS_AUTH'] = 'Bearer tickets-secret';
  h = await startHarness({
    env: {
      PORTAL_TOOL_URL_ALLOW: `${mcp.url},${deadUrl}`,
      TOOL_TIMEOUT_MS: '2000',
      TOOL_MAX_RESPONSE_BYTES: '20000',
      MCP_LIST_TIMEOUT_MS: '10000',
      MCP_LIST_CACHE_MS: '60000',
    },
  });
  await setServers('helpdesk', [tickets()]);
  await setServers('patchy', [tickets(), { name: 'down', url: deadUrl }]);
});
afterAll(async () => {
  await h.close();
  await mcp.close();
  delete process.env['MCP_TEST_TICKETS_AUTH'];
});

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });
const toolNames = (request: Harness['fake']['requests'][number]) =>
  (request.body.tools as { function: { name: string } }[]).map((t) => t.function.name);

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('MCP tools offered to the model', () => {
  it("offers the agent's listed tools as <server>__<tool> with their description and input schema", async () => {
    const { turnId } = await h.openTurn({ agentId: 'helpdesk' });
    const mark = h.fake.requests.length;
    h.fake.enqueue('Hello.');
    await h.run(turnId);

    const [request] = h.turnCalls(mark);
    const names = toolNames(request);
    expect(names).toEqual(
      expect.arrayContaining([
        'tickets__lookup',
        'tickets__delete_ticket',
        'tickets__broken',
        'tickets__hang',
        'tickets__report',
        'tickets__big',
        'tickets__picture',
      ]),
    );
    expect(names).not.toContain('tickets__admin_reset');
    const lookup = (request.body.tools as { function: Record<string, unknown> }[]).find(
      (t) => t.function.name === 'tickets__lookup',
    );
    expect(lookup!.function).toMatchObject({
      description: 'Look a ticket up by its words.',
      parameters: {
        type: 'object',
        properties: { q: { type: 'string', description: 'Words to find' } },
        required: ['q'],
      },
    });
    expect(mcp.calls).toEqual([]);
    expect(transcriptOf(request)).not.toContain('could not be reached');
  });

  it('lists a server once while its list is cached, per org and server', async () => {
    const before = mcp.lists;
    for (let i = 0; i < 2; i++) {
      const { turnId } = await h.openTurn({ agentId: 'helpdesk' });
      await h.run(turnId);
    }
    expect(mcp.lists).toBe(before);
  });

  it('leaves an unreachable server out of the turn, says so in the runtime contract, and goes on', async () => {
    const { turnId } = await h.openTurn({ agentId: 'patchy' });
    const mark = h.fake.requests.length;
    h.fake.enqueue({ toolCalls: [call('tickets__lookup', { q: 'printer' })] }, 'T-1 it is.');
    await h.run(turnId);

    const [first] = h.turnCalls(mark);
    expect(toolNames(first).filter((n) => n.startsWith('down__'))).toEqual([]);
    expect(first.body.messages[0].content).toContain(
      'The MCP servers down could not be reached when this turn started',
    );
    expect((await h.turn(turnId))!.status).toBe('completed');
    const stored = await new CallInputRepository(h.db.dataSource).read(ORG, (await h.turn(turnId))!);
    expect(stored!.turn.mcpTools).toMatchObject({ unavailable: ['down'] });
  });
});

describe('MCP tool calls', () => {
  it("send the model's arguments to tools/call; results, errors, hangs and oversized answers bounded", async () => {
    const { turnId } = await h.openTurn({ agentId: 'helpdesk' });
    mcp.calls.length = 0;
    h.fake.enqueue(
      {
        toolCalls: [
          call('tickets__lookup', { q: 'printer' }),
          call('tickets__broken'),
          call('tickets__hang'),
          call('tickets__big'),
          call('tickets__picture'),
        ],
      },
      'Done.',
    );
    const started = Date.now();
    await h.run(turnId);
    expect(Date.now() - started).toBeLessThan(10_000);

    expect(mcp.calls.map((c) => [c.tool, c.args])).toEqual([
      ['lookup', { q: 'printer' }],
      ['broken', {}],
      ['hang', {}],
      ['big', {}],
      ['picture', {}],
    ]);
    expect(mcp.calls[0].headers['authorization']).toBe('Bearer tickets-secret');
    const results = (await h.blocks(turnId)).filter((b) => b.kind === 'tool_result');
    expect(results.map((r) => [r.outcome, r.content])).toEqual([
      ['ok', 'Found ticket T-1 for "printer".'],
      ['error', 'The ticket system is down.'],
      ['error', 'tickets__hang: MCP server tickets: no answer within 2000 ms.'],
      ['error', 'tickets__big: MCP server tickets: the response was larger than 20000 bytes.'],
      [
        'ok',
        '[an image (image/png, 16 bytes), not shown]\n\n[a resource link: chart <https://tickets.example.com/chart>]',
      ],
    ]);
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);

    const metrics = await h.app
      .get(PortalMetrics)
      .registry.getSingleMetricAsString('portal_tool_calls_total');
    expect(metrics).toMatch(/portal_tool_calls_total\{source="mcp",server="tickets",outcome="ok"\} [2-9]/);
    expect(metrics).toMatch(/portal_tool_calls_total\{source="mcp",server="tickets",outcome="error"\} [3-9]/);
    expect(metrics).not.toContain('printer');
  });

  it('replays an MCP result by the memory rules: a 400-character preview with its ref, whole through read_tool_result', async () => {
    const { turnId, conversationId } = await h.openTurn({ agentId: 'helpdesk' });
    h.fake.enqueue({ toolCalls: [call('tickets__report')] }, 'Report read.');
    await h.run(turnId);

    const next = await h.openTurn({ agentId: 'helpdesk', conversationId, text: 'Again?' });
    const mark = h.fake.requests.length;
    h.fake.enqueue('Seen.');
    await h.run(next.turnId);
    const replayed = JSON.stringify(h.turnCalls(mark)[0].body.messages);
    expect(replayed).toContain(MCP_REPORT_TEXT.slice(0, 400));
    expect(replayed).not.toContain(MCP_REPORT_TEXT.slice(0, 401));
    const ref = /ref:(tr_[A-Za-z0-9_-]+)/.exec(replayed)![1];

    const third = await h.openTurn({ agentId: 'helpdesk', conversationId, text: 'Read it whole.' });
    h.fake.enqueue({ toolCalls: [call('read_tool_result', { ref: `ref:${ref}` })] }, 'Whole.');
    await h.run(third.turnId);
    const whole = (await h.blocks(third.turnId)).find((b) => b.kind === 'tool_result');
    expect(whole).toMatchObject({ outcome: 'ok', content: MCP_REPORT_TEXT });
  });
});

describe('MCP approval', () => {
  async function pausedOnApproval() {
    const { turnId } = await h.openTurn({ agentId: 'helpdesk' });
    const mark = h.fake.requests.length;
    h.fake.enqueue({ toolCalls: [call('tickets__delete_ticket', { id: 'T-9' })] });
    await h.run(turnId);
    const request = (await h.blocks(turnId)).at(-1) as ApprovalRequestBlock;
    return { turnId, request, firstTools: toolNames(h.turnCalls(mark)[0]) };
  }

  it('pauses for approval; approved, the call reaches the server and the resumed turn offers the same tools', async () => {
    mcp.calls.length = 0;
    const { turnId, request, firstTools } = await pausedOnApproval();
    expect((await h.turn(turnId))!.status).toBe('paused');
    expect(request).toMatchObject({
      kind: 'approval_request',
      name: 'tickets__delete_ticket',
      arguments: '{"id":"T-9"}',
    });
    expect(mcp.calls).toEqual([]);

    // The agent changes meanwhile: the resumed turn still offers what it listed when it started.
    await setServers('helpdesk', [tickets({ tools: undefined })]);
    try {
      await h.answer(turnId, request.id, { approved: true });
      const mark = h.fake.requests.length;
      h.fake.enqueue('Deleted.');
      await h.run(turnId);

      expect(mcp.calls.map((c) => [c.tool, c.args])).toEqual([['delete_ticket', { id: 'T-9' }]]);
      expect(toolNames(h.turnCalls(mark)[0])).toEqual(firstTools);
      expect((await h.turn(turnId))!.status).toBe('completed');
      await expectValid(turnId);
    } finally {
      await setServers('helpdesk', [tickets()]);
    }
  });

  it('denied, the call never reaches the server', async () => {
    mcp.calls.length = 0;
    const { turnId, request } = await pausedOnApproval();
    await h.answer(turnId, request.id, { approved: false, note: 'no' });
    h.fake.enqueue('Kept it.');
    await h.run(turnId);

    expect(mcp.calls).toEqual([]);
    expect((await h.blocks(turnId)).find((b) => b.kind === 'tool_result')).toMatchObject({
      outcome: 'denied',
    });
  });

  it('checks the URL against PORTAL_TOOL_URL_ALLOW again at call time', async () => {
    mcp.calls.length = 0;
    const { turnId, request } = await pausedOnApproval();
    await setServers('helpdesk', [tickets({ url: mcp.url.replace('/mcp', '/other') })]);
    try {
      await h.answer(turnId, request.id, { approved: true });
      h.fake.enqueue('Could not.');
      await h.run(turnId);
    } finally {
      await setServers('helpdesk', [tickets()]);
    }
    expect(mcp.calls).toEqual([]);
    expect((await h.blocks(turnId)).find((b) => b.kind === 'tool_result')).toMatchObject({
      outcome: 'error',
      content: expect.stringContaining('is not allowed (not in PORTAL_TOOL_URL_ALLOW)'),
    });
  });

  it('requiresApproval: true pauses every call of the server', async () => {
    await setServers('careful', [tickets({ requiresApproval: true })]);
    const { turnId } = await h.openTurn({ agentId: 'careful' });
    h.fake.enqueue({ toolCalls: [call('tickets__lookup', { q: 'x' })] });
    await h.run(turnId);
    expect((await h.turn(turnId))!.status).toBe('paused');
  });
});

describe('MCP tenancy', () => {
  it("another org's agent never reaches this org's MCP server", async () => {
    const other = OrgId('globex');
    const ds = h.db.dataSource;
    await new OrgRepository(ds).upsert(other);
    await new UserRepository(ds).upsert(other, UserId('bob'), 'author');
    // Its agent names a server `tickets` too, at a URL where nothing listens.
    await setServers('helpdesk', [{ name: 'tickets', url: deadUrl }], other);
    const conversation = await new ConversationRepository(ds).create(
      other,
      UserId('bob'),
      AgentId('helpdesk'),
    );
    const created = await new TurnRepository(ds).createWithUserMessage(other, {
      conversationId: conversation!.id,
      effort: 'medium',
      model: 'gpt-test',
      text: 'Delete T-1.',
    });
    mcp.calls.length = 0;
    const mark = h.fake.requests.length;
    h.fake.enqueue({ toolCalls: [call('tickets__lookup', { q: 'x' })] }, 'No such tool.');
    await h.app.get(TurnRunner).run({ orgId: other, turnId: created!.turn.id }, new AbortController().signal);

    const [first] = h.turnCalls(mark);
    expect(toolNames(first).some((n) => n.startsWith('tickets__'))).toBe(false);
    expect(first.body.messages[0].content).toContain('The MCP servers tickets could not be reached');
    expect(mcp.calls).toEqual([]);
    expect((await h.blocks(created!.turn.id)).length).toBe(0); // another org's turn: not visible as ORG
    const turn = await new TurnRepository(ds).get(other, created!.turn.id);
    expect(turn!.status).toBe('completed');
  });
});
