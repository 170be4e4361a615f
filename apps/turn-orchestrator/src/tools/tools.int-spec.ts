import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AttachmentRepository, ConversationRepository, TurnRepository, type AgentTool } from '@portal/dal';
import {
  type ApprovalRequestBlock,
  AttachmentId,
  checkTurn,
  type ClarificationRequestBlock,
  ConversationId,
  TurnId,
  UserId,
} from '@portal/domain';
import { ORG, startHarness, transcriptOf, type Harness } from '../../test/turn.harness';
import { TurnReconciler } from '../turn/turn-reconciler.service';
import { CANCELLED_ANSWER } from '../turn/turn-store.service';

/** A local HTTP service the agent's tools call: routes by path, every request recorded. */
let server: Server;
let base: string;
const received: { path: string; body: unknown }[] = [];
let h: Harness;

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void body(req).then((text) => {
      const path = req.url ?? '';
      received.push({ path, body: text ? JSON.parse(text) : null });
      if (path === '/allowed/echo') return res.end(JSON.stringify({ echo: JSON.parse(text) }));
      if (path === '/allowed/redirect') {
        res.writeHead(302, { location: `${base}/outside/echo` });
        return res.end();
      }
      if (path === '/allowed/big') return res.end('x'.repeat(5000));
      if (path === '/allowed/fail') {
        res.writeHead(503);
        return res.end('down for maintenance');
      }
      if (path === '/allowed/slow') return; // never answers
      res.end('outside');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tool = (name: string, path: string, requiresApproval = false): AgentTool => ({
    name,
    description: `The ${name} tool.`,
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    url: `${base}${path}`,
    requiresApproval,
  });
  h = await startHarness({
    env: {
      PORTAL_TOOL_URL_ALLOW: `${base}/allowed/`,
      TOOL_TIMEOUT_MS: '300',
      TOOL_MAX_RESPONSE_BYTES: '1000',
    },
    tools: [
      tool('echo', '/allowed/echo'),
      tool('redirect', '/allowed/redirect'),
      tool('big', '/allowed/big'),
      tool('fail', '/allowed/fail'),
      tool('slow', '/allowed/slow'),
      tool('outside', '/outside/echo'),
      tool('guarded', '/allowed/echo', true),
    ],
  });
});
afterAll(async () => {
  await h.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const call = (name: string, args: Record<string, unknown> = {}) => ({ name, arguments: args });

async function expectValid(turnId: string) {
  expect(checkTurn({ turn: (await h.turn(turnId))!, messages: await h.messages(turnId) })).toEqual([]);
}

describe('HTTP tools', () => {
  it('POST the arguments to an allowed URL; refuse the rest with error results', async () => {
    const { turnId } = await h.openTurn();
    received.length = 0;
    h.fake.enqueue(
      {
        toolCalls: [
          call('echo', { q: 'revenue' }),
          call('outside', { q: 'secret' }),
          call('redirect'),
          call('slow'),
          call('big'),
          call('fail'),
        ],
      },
      'Done.',
    );
    await h.run(turnId);

    const results = (await h.blocks(turnId)).filter((b) => b.kind === 'tool_result');
    expect(results.map((r) => [r.outcome, r.content])).toEqual([
      ['ok', '{"echo":{"q":"revenue"}}'],
      ['error', expect.stringContaining('not allowed to call')],
      ['error', expect.stringContaining('HTTP 302 redirect')],
      ['error', 'slow: no response within 300 ms.'],
      ['error', 'big: the response was larger than 1000 bytes.'],
      ['error', 'fail: HTTP 503: down for maintenance'],
    ]);
    expect(received.map((r) => r.path).sort()).toEqual(
      ['/allowed/big', '/allowed/echo', '/allowed/fail', '/allowed/redirect', '/allowed/slow'].sort(),
    );
    expect(received.find((r) => r.path === '/allowed/echo')!.body).toEqual({ q: 'revenue' });
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
  });
});

describe('approval', () => {
  async function pausedOnApproval() {
    const { turnId } = await h.openTurn();
    h.fake.enqueue({ toolCalls: [call('guarded', { q: 'delete it' })] });
    await h.run(turnId);
    const turn = await h.turn(turnId);
    const blocks = await h.blocks(turnId);
    const request = blocks.at(-1) as ApprovalRequestBlock;
    return { turnId, turn, request };
  }

  it('pauses on a tool that needs approval; approved, the tool runs and the turn goes on', async () => {
    received.length = 0;
    const { turnId, turn, request } = await pausedOnApproval();
    expect(turn!.status).toBe('paused');
    expect(request).toMatchObject({
      kind: 'approval_request',
      name: 'guarded',
      arguments: '{"q":"delete it"}',
      approved: null,
    });
    expect(received).toEqual([]);
    await expectValid(turnId);

    const mark = h.fake.requests.length;
    await h.answer(turnId, request.id, { approved: true, note: 'go ahead' });
    h.fake.enqueue('Deleted.');
    await h.run(turnId);

    expect(received).toEqual([{ path: '/allowed/echo', body: { q: 'delete it' } }]);
    const blocks = await h.blocks(turnId);
    expect(blocks.at(-2)).toMatchObject({ kind: 'tool_result', outcome: 'ok', callId: request.callId });
    expect(transcriptOf(h.turnCalls(mark)[0])).toContain('delete it');
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
  });

  it('denied, the tool is never called and the result says so with the note', async () => {
    received.length = 0;
    const { turnId, request } = await pausedOnApproval();
    await h.answer(turnId, request.id, { approved: false, note: 'not today' });
    h.fake.enqueue('Understood.');
    await h.run(turnId);

    expect(received).toEqual([]);
    const result = (await h.blocks(turnId)).find((b) => b.kind === 'tool_result');
    expect(result).toMatchObject({
      outcome: 'denied',
      content: 'The person denied this call. Their note: not today',
    });
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
  });
});

describe('clarification', () => {
  it('pauses with the question; the answer becomes the call result read by the next call', async () => {
    const { turnId } = await h.openTurn({ text: 'Report the revenue.' });
    h.fake.enqueue({
      toolCalls: [call('ask_clarification', { question: 'Which year?', options: ['2023', '2024'] })],
    });
    await h.run(turnId);

    expect((await h.turn(turnId))!.status).toBe('paused');
    const request = (await h.blocks(turnId)).at(-1) as ClarificationRequestBlock;
    expect(request).toMatchObject({
      kind: 'clarification_request',
      question: 'Which year?',
      options: ['2023', '2024'],
      answer: null,
    });

    const mark = h.fake.requests.length;
    await h.answer(turnId, request.id, { answer: '2024' });
    h.fake.enqueue('Revenue 2024 was $4.2M.');
    await h.run(turnId);

    const next = h.turnCalls(mark)[0];
    expect(next.body.messages.at(-1)).toEqual({
      role: 'tool',
      tool_call_id: request.callId,
      content: '2024',
    });
    expect((await h.turn(turnId))!.status).toBe('completed');
    await expectValid(turnId);
  });

  it('a paused turn 1 cancelled is cut off by the cancel job, its request answered as cancelled, and named', async () => {
    const { turnId, conversationId } = await h.openTurn();
    h.fake.enqueue({ toolCalls: [call('ask_clarification', { question: 'Which?' })] });
    await h.run(turnId);
    await h.cancel(turnId);
    await h.run(turnId);

    expect((await h.turn(turnId))!.status).toBe('cut_off');
    const blocks = await h.blocks(turnId);
    expect(blocks.at(-1)).toMatchObject({ kind: 'clarification_request', answer: CANCELLED_ANSWER });
    expect(blocks.some((b) => b.kind === 'tool_result')).toBe(false);
    expect((await h.events(conversationId)).find((e) => e.type === 'turn_finished')).toEqual({
      type: 'turn_finished',
      turnId,
      status: 'cut_off',
    });
    await expectValid(turnId);
    expect(
      (await new ConversationRepository(h.db.dataSource).get(ORG, ConversationId(conversationId)))!.title,
    ).toBe('Test title');
    expect((await h.usage(turnId)).map((u) => u.kind)).toEqual(['turn', 'summary']);
  });
});

describe('a cancelled pause whose cancel job was lost', () => {
  it('is found by the reconciler, cut off by the job it enqueues, and turn 1 is named', async () => {
    const { turnId, conversationId } = await h.openTurn();
    h.fake.enqueue({ toolCalls: [call('ask_clarification', { question: 'Which?' })] });
    await h.run(turnId);
    // The gateway flagged the cancel, but Redis lost the job it enqueued.
    await new TurnRepository(h.db.dataSource).requestCancel(ORG, TurnId(turnId));

    expect(await h.app.get(TurnReconciler).reconcile({ idleMs: 0 })).toContain(turnId);
    await h.run(turnId);
    expect((await h.turn(turnId))!.status).toBe('cut_off');
    expect(
      (await new ConversationRepository(h.db.dataSource).get(ORG, ConversationId(conversationId)))!.title,
    ).toBe('Test title');
  });
});

describe('attachment tools', () => {
  it("read and search the conversation's documents", async () => {
    const { turnId, conversationId } = await h.openTurn();
    const attachments = new AttachmentRepository(h.db.dataSource);
    const doc = await attachments.create(ORG, {
      id: randomUUID(),
      userId: UserId('alice'),
      conversationId: ConversationId(conversationId),
      kind: 'document',
      filename: 'report.txt',
      mimeType: 'text/plain',
      byteSize: 40,
      sha256: 'x',
    });
    await attachments.savePage(ORG, AttachmentId(doc!.id), 1, 'Q3 revenue was 4.2 million.');
    await attachments.update(ORG, AttachmentId(doc!.id), {
      status: 'finished',
      pageCount: 1,
      pagesRead: 1,
      chars: 27,
    });
    h.fake.enqueue(
      {
        toolCalls: [
          call('read_document', { attachment_id: doc!.id }),
          call('search_attachments', { query: 'revenue' }),
          call('read_document', { attachment_id: '00000000-0000-0000-0000-000000000000' }),
        ],
      },
      'Read.',
    );
    await h.run(turnId);
    const results = (await h.blocks(turnId)).filter((b) => b.kind === 'tool_result');
    expect(results.map((r) => r.outcome)).toEqual(['ok', 'ok', 'error']);
    expect(results[0].content).toContain('Q3 revenue was 4.2 million.');
    expect(results[1].content).toContain('report.txt');
  });
});
