import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkTurn, type InvariantViolation, type Message, TurnId, type TurnStatus } from '@portal/domain';
import type { FakeOpenAI, FakeRequest, FakeResponder, FakeScript } from '../fake-openai';
import { ApiClient, type SseEvent } from './api.client';
import { subscribeEvents, type EventSubscription } from './event-stream';
import { startPortal, type PortalOptions, type RunningPortal } from './portal.harness';

// --- The standard end-to-end portal: catalogue, two orgs, tools -----------------------------

/** API keys of `e2eBootstrap`. */
export const E2E_KEYS = {
  alice: 'pk_e2e_alice_author', // acme author
  bob: 'pk_e2e_bob_member', // acme member
  carol: 'pk_e2e_carol_admin', // acme admin, owns the private skill `secret`
  mallory: 'pk_e2e_mallory_author', // globex author
} as const;
export type E2EUser = keyof typeof E2E_KEYS;

/** Two models on the fake server: `fast` cannot reason or see, `thinker` can both. */
export function e2eModels(baseURL: string) {
  return {
    models: [
      {
        id: 'fast',
        model: 'fake-fast',
        baseURL,
        contextWindow: 128_000,
        reasoning: false,
        price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
      },
      {
        id: 'thinker',
        model: 'fake-thinker',
        baseURL,
        contextWindow: 200_000,
        vision: { maxLongSide: 2048, maxShortSide: 768 },
        reasoning: true,
        price: { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 },
      },
    ],
  };
}

const skill = (slug: string, extra: Record<string, unknown> = {}) => ({
  slug,
  name: slug
    .split('-')
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join(' '),
  description: `The ${slug} skill in one sentence.`,
  instructions: `Apply the ${slug} rules: INSTRUCTIONS-OF-${slug.toUpperCase()}.`,
  visibility: 'org',
  status: 'active',
  published: true,
  owner: 'alice',
  ...extra,
});

/**
 * acme: alice (author), bob (member), carol (admin); skills fact-check, style-guide, draft
 * (unpublished), secret (carol's, private), retired (inactive); agents `helper` (model fast, HTTP
 * tools `lookup` and `deploy`, the latter needing approval) and `deep` (model thinker, `lookup`).
 * globex: mallory and agent `rival`.
 */
export function e2eBootstrap(toolBaseURL: string) {
  const parameters = {
    type: 'object',
    properties: { query: { type: 'string' } },
    required: ['query'],
  };
  const lookup = {
    name: 'lookup',
    description: 'Looks a query up.',
    parameters,
    url: `${toolBaseURL}/lookup`,
    requiresApproval: false,
  };
  const deploy = {
    name: 'deploy',
    description: 'Deploys a change; a person approves it first.',
    parameters,
    url: `${toolBaseURL}/deploy`,
    requiresApproval: true,
  };
  return {
    portalFloor: 'You are the E2E test assistant.',
    orgs: [
      {
        id: 'acme',
        users: [
          { id: 'alice', role: 'author', apiKey: E2E_KEYS.alice },
          { id: 'bob', role: 'member', apiKey: E2E_KEYS.bob },
          { id: 'carol', role: 'admin', apiKey: E2E_KEYS.carol },
        ],
        skills: [
          skill('fact-check'),
          skill('style-guide'),
          skill('draft', { published: false }),
          skill('secret', { visibility: 'private', owner: 'carol' }),
          skill('retired', { status: 'inactive' }),
        ],
        agents: [
          {
            id: 'helper',
            name: 'Helper',
            instructions: 'Help with care.',
            model: 'fast',
            effort: 'medium',
            skills: ['fact-check', 'style-guide', 'draft'],
            tools: [lookup, deploy],
          },
          {
            id: 'deep',
            name: 'Deep',
            instructions: 'Think first.',
            model: 'thinker',
            effort: 'low',
            tools: [lookup],
          },
        ],
      },
      {
        id: 'globex',
        users: [{ id: 'mallory', role: 'author', apiKey: E2E_KEYS.mallory }],
        skills: [skill('globex-only', { owner: 'mallory' })],
        agents: [{ id: 'rival', name: 'Rival', model: 'fast', skills: ['globex-only'] }],
      },
    ],
  };
}

// --- A local HTTP tool server ----------------------------------------------------------------

export interface ToolRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

/** A tool server's answer: status (default 200), body (a string is sent as is), extra headers (e.g. `location`). */
export interface ToolAnswer {
  status?: number;
  body: unknown;
  headers?: Record<string, string>;
}

export interface ToolServer {
  /** Root URL, no trailing slash: tools live at `${url}/<name>`. */
  url: string;
  requests: ToolRequest[];
  /** Decides the answer: status and body (a string is sent as is, anything else as JSON). */
  respond(fn: (request: ToolRequest) => ToolAnswer): void;
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 that agents' HTTP tools POST to; it records every call. */
export async function startToolServer(): Promise<ToolServer> {
  const requests: ToolRequest[] = [];
  let responder: (request: ToolRequest) => ToolAnswer = (r) => ({
    body: { tool: r.path.slice(1), echo: r.body },
  });
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // kept as text
      }
      const request: ToolRequest = { path: (req.url ?? '').split('?')[0], headers: req.headers, body };
      requests.push(request);
      const answer = responder(request);
      const payload = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      res.writeHead(answer.status ?? 200, {
        ...answer.headers,
        'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json',
      });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond: (fn) => void (responder = fn),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- Scripting the fake model per test ------------------------------------------------------

const KEY = /\[k:([\w-]+)\]/g;

/** A title call (SPEC 3): the side call that names a conversation after its first turn. */
export function isTitleRequest(request: FakeRequest): boolean {
  const first = request.body?.messages?.[0];
  return first?.role === 'system' && String(first.content).startsWith('You name conversations');
}

/** A review call (SPEC 3): the output guardrail's check of one sentence. */
export function isReviewRequest(request: FakeRequest): boolean {
  const first = request.body?.messages?.[0];
  return first?.role === 'system' && String(first.content).startsWith('You review');
}

/**
 * Routes the fake model's chat requests by a key each test writes into its messages (`[k:name]`,
 * see `tag`): a request gets the next script queued for the newest key it carries, so tests that
 * share a fake server (and conversations) never take each other's answers, and the title call
 * never takes a turn's. Title calls answer `Title <key>`; review calls what `reviewer` says
 * (`PASS` unless a test sets it); anything else `defaultAnswer`.
 */
export class ScriptedModel {
  private readonly scripts = new Map<string, (FakeScript | FakeResponder)[]>();
  private readonly routed = new Map<string, FakeRequest[]>();
  readonly titleRequests: FakeRequest[] = [];
  readonly reviewRequests: FakeRequest[] = [];
  reviewer: FakeResponder = () => 'PASS';

  constructor(
    readonly fake: FakeOpenAI,
    private readonly defaultAnswer: FakeScript = 'Fake answer.',
  ) {
    fake.setDefault((request) => this.answer(request));
  }

  /** The marker that routes a message's model calls to `key`. */
  tag(key: string): string {
    return `[k:${key}]`;
  }

  /** Queues answers for the next model calls of messages tagged `key`. */
  script(key: string, ...scripts: (FakeScript | FakeResponder)[]): void {
    const queue = this.scripts.get(key) ?? [];
    queue.push(...scripts);
    this.scripts.set(key, queue);
  }

  /** Scripts of `key` not used yet. */
  pending(key: string): number {
    return this.scripts.get(key)?.length ?? 0;
  }

  /** The turn calls that were routed to `key`, in order. */
  requestsFor(key: string): FakeRequest[] {
    return this.routed.get(key) ?? [];
  }

  private async answer(request: FakeRequest): Promise<FakeScript> {
    const keys = [...JSON.stringify(request.body?.messages ?? []).matchAll(KEY)].map((m) => m[1]);
    if (isTitleRequest(request)) {
      this.titleRequests.push(request);
      return `Title ${keys[0] ?? 'untitled'}`;
    }
    if (isReviewRequest(request)) {
      this.reviewRequests.push(request);
      return this.reviewer(request);
    }
    const key = [...keys].reverse().find((k) => this.pending(k) > 0) ?? keys.at(-1);
    if (key === undefined) return this.defaultAnswer;
    this.routed.set(key, [...this.requestsFor(key), request]);
    const next = this.scripts.get(key)?.shift();
    if (next === undefined) return this.defaultAnswer;
    return typeof next === 'function' ? next(request) : next;
  }
}

// --- Working with a running portal -----------------------------------------------------------

export interface E2ETurn {
  id: string;
  conversationId: string;
  n: number;
  status: TurnStatus;
  effort: string;
  model: string;
  contextTokens: number | null;
  selectedSkillIds: string[];
  catalogueSkillIds: string[];
  error: string | null;
}

/** A conversation of one user with its SSE subscription open from its creation on. */
export class E2EConversation {
  constructor(
    readonly id: string,
    readonly api: ApiClient,
    readonly events: EventSubscription,
  ) {}

  post(body: { text: string; attachmentIds?: string[]; effort?: string }) {
    return this.api.post(`/v1/conversations/${this.id}/messages`, body);
  }

  /** Posts a message that must open a turn; returns the turn id. */
  async open(text: string, extra: { effort?: string } = {}): Promise<string> {
    const res = await this.post({ text, ...extra });
    if (res.status !== 202 || !res.body.turnId || res.body.steered) {
      throw new Error(`message "${text}": ${res.status} ${JSON.stringify(res.body)}`);
    }
    return res.body.turnId as string;
  }

  /** Waits for the turn's `turn_finished` event and returns it. */
  finished(turnId: string, timeoutMs = 15_000): Promise<SseEvent> {
    return this.events.waitFor((e) => e.data.type === 'turn_finished' && e.data.turnId === turnId, {
      timeoutMs,
    });
  }

  /** Waits for the turn's first event of `type` that passes `test`. */
  event(turnId: string, type: string, test: (data: any) => boolean = () => true, timeoutMs = 15_000) {
    return this.events.waitFor((e) => e.data.turnId === turnId && e.data.type === type && test(e.data), {
      timeoutMs,
    });
  }

  /** Opens a turn and waits until it has finished: its id, its events and the finishing event. */
  async run(text: string, extra: { effort?: string } = {}) {
    const turnId = await this.open(text, extra);
    const finish = await this.finished(turnId);
    return { turnId, finish: finish.data, events: this.events.ofTurn(turnId) };
  }

  async turn(turnId: string): Promise<E2ETurn> {
    const res = await this.api.get<E2ETurn>(`/v1/turns/${turnId}`);
    if (res.status !== 200) throw new Error(`turn ${turnId}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async messages(turnId?: string): Promise<Message[]> {
    const res = await this.api.get<Message[]>(`/v1/conversations/${this.id}/messages`);
    if (res.status !== 200) throw new Error(`messages: ${res.status} ${JSON.stringify(res.body)}`);
    return turnId === undefined ? res.body : res.body.filter((m) => m.turnId === turnId);
  }

  /** The six invariants (SPEC 8) on the turn as the API shows it. */
  async violations(turnId: string): Promise<InvariantViolation[]> {
    const [turn, messages] = await Promise.all([this.turn(turnId), this.messages(turnId)]);
    return checkTurn({
      turn: { id: TurnId(turn.id), n: turn.n, kind: 'turn', status: turn.status },
      messages,
    });
  }

  close(): void {
    this.events.close();
  }
}

/**
 * The standard portal for end-to-end suites: the fake model routed per test (`ScriptedModel`), a
 * tool server allowed by PORTAL_TOOL_URL_ALLOW, `e2eModels` and `e2eBootstrap`.
 */
export interface E2EPortal {
  portal: RunningPortal;
  model: ScriptedModel;
  tools: ToolServer;
  api(user: E2EUser): ApiClient;
  /** A new conversation, its events followed from before its first message. */
  conversation(user?: E2EUser, agentId?: string): Promise<E2EConversation>;
  /** Every turn of every conversation opened so far that breaks one of the six invariants. */
  violations(): Promise<{ turnId: string; status: string; violations: InvariantViolation[] }[]>;
  stop(): Promise<void>;
}

export async function startE2EPortal(
  fake: FakeOpenAI,
  options: Omit<PortalOptions, 'models' | 'bootstrap'> = {},
): Promise<E2EPortal> {
  const model = new ScriptedModel(fake);
  const tools = await startToolServer();
  let portal: RunningPortal;
  try {
    portal = await startPortal({
      ...options,
      models: e2eModels(fake.baseURL),
      bootstrap: e2eBootstrap(tools.url),
      env: { PORTAL_TOOL_URL_ALLOW: `${tools.url}/`, ...options.env },
    });
  } catch (err) {
    await tools.close();
    throw err;
  }
  const conversations: E2EConversation[] = [];
  const api = (user: E2EUser) => new ApiClient(portal.baseURL, E2E_KEYS[user]);
  return {
    portal,
    model,
    tools,
    api,
    async conversation(user = 'alice', agentId = 'helper') {
      const client = api(user);
      const created = await client.post('/v1/conversations', { agentId });
      if (created.status !== 201)
        throw new Error(`conversation: ${created.status} ${JSON.stringify(created.body)}`);
      const id = created.body.id as string;
      const events = await subscribeEvents(`${portal.baseURL}/v1/conversations/${id}/events`, E2E_KEYS[user]);
      if (events.status !== 200) throw new Error(`events of ${id}: ${events.status}`);
      const conversation = new E2EConversation(id, client, events);
      conversations.push(conversation);
      return conversation;
    },
    async violations() {
      const found: { turnId: string; status: string; violations: InvariantViolation[] }[] = [];
      for (const c of conversations) {
        const { body } = await c.api.get(`/v1/conversations/${c.id}`);
        for (const turn of body.turns as { id: string; status: string }[]) {
          const violations = await c.violations(turn.id);
          if (violations.length) found.push({ turnId: turn.id, status: turn.status, violations });
        }
      }
      return found;
    },
    async stop() {
      for (const c of conversations) c.close();
      await portal.stop();
      await tools.close();
    },
  };
}

/** The blocks of a turn's transcript, in order. */
export function blocksOf(messages: Message[]) {
  return messages.flatMap((m) => m.blocks);
}

/** Per block id, the last `block_finished` version seen on the stream for the turn. */
export function finishedBlocks(events: SseEvent[]) {
  const byId = new Map<string, any>();
  for (const e of events) if (e.data.type === 'block_finished') byId.set(e.data.block.id, e.data.block);
  return byId;
}
