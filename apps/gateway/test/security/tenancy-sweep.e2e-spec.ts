import {
  E2E_KEYS,
  startE2EPortal,
  startFakeOpenAI,
  textTable,
  type E2EConversation,
  type E2EPortal,
  type E2EUser,
  type FakeOpenAI,
} from '@portal/testing';
import {
  closeRawAgent,
  codeOf,
  pausedOnApproval,
  sendRaw,
  uploadText,
  type RawResponse,
} from './security.helpers';

/**
 * Issue part 3: every endpoint of API.md that names a resource (REST and SSE, attachments
 * included), called by users who do not own it — mallory of another org, bob and carol (a member
 * and an admin) of the same org — answers exactly as for a missing id: 404 `not_found` (a role
 * check that comes first answers the same for both). Printed as endpoint × caller → status.
 */
const MISSING = '7d1e7c52-1f3a-4c8e-9d55-0a4b2c6e8f10';

let fake: FakeOpenAI;
let e2e: E2EPortal;
let chat: E2EConversation;
/** Alice's resources. */
let own: { conversation: string; turn: string; block: string; attachment: string; lastEventId: string };
/** A conversation of each caller, for the rows that send alice's ids from the caller's own one. */
const theirs: Partial<Record<E2EUser, string>> = {};
let secretSkill: string;
let factCheck: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  e2e = await startE2EPortal(fake);
  chat = await e2e.conversation('alice', 'helper');
  const attachment = await uploadText(e2e, 'alice', 'alice-private.txt', 'Alice only.', chat.id);
  const { turnId, blockId } = await pausedOnApproval(e2e, chat, 'tenancy');
  own = {
    conversation: chat.id,
    turn: turnId,
    block: blockId,
    attachment,
    lastEventId: chat.events.lastId()!,
  };
  for (const user of ['mallory', 'bob', 'carol'] as const) {
    const created = await e2e
      .api(user)
      .post('/v1/conversations', { agentId: user === 'mallory' ? 'rival' : 'helper' });
    theirs[user] = created.body.id;
  }
  const skills = (await e2e.api('carol').get('/v1/skills')).body as { id: string; slug: string }[];
  secretSkill = skills.find((s) => s.slug === 'secret')!.id;
  factCheck = skills.find((s) => s.slug === 'fact-check')!.id;
}, 90_000);

afterAll(async () => {
  closeRawAgent();
  await e2e?.stop();
  await fake?.close();
});

interface Probe {
  name: string;
  method: string;
  /** The path for a resource id (the owner's, or a missing one). */
  path: (id: string, caller: E2EUser) => string;
  /** The owner's id. */
  id: () => string;
  body?: (id: string, caller: E2EUser) => unknown;
  headers?: Record<string, string>;
  /** Who may see it legitimately (org-wide resources): their cells are not expected to be 404. */
  visibleTo?: E2EUser[];
  /** What the answer must be instead of 404 not_found (e.g. 422 attachment_not_found in a message). */
  expected?: [number, string];
  /** Safe for the owner to call (no change): shown as the owner's control column. */
  ownerControl?: boolean;
  multipart?: boolean;
}

const conv =
  (suffix = '') =>
  (id: string) =>
    `/v1/conversations/${id}${suffix}`;
const turn =
  (suffix = '') =>
  (id: string) =>
    `/v1/turns/${id}${suffix}`;

const probes: Probe[] = [
  {
    name: 'GET /v1/conversations/:id',
    method: 'GET',
    path: conv(),
    id: () => own.conversation,
    ownerControl: true,
  },
  {
    name: 'GET /v1/conversations/:id/messages',
    method: 'GET',
    path: conv('/messages'),
    id: () => own.conversation,
    ownerControl: true,
  },
  {
    name: 'POST /v1/conversations/:id/messages',
    method: 'POST',
    path: conv('/messages'),
    id: () => own.conversation,
    body: () => ({ text: 'let me in' }),
  },
  {
    name: 'GET /v1/conversations/:id/prompt-preview',
    method: 'GET',
    path: conv('/prompt-preview'),
    id: () => own.conversation,
    ownerControl: true,
  },
  {
    name: 'GET /v1/conversations/:id/events (SSE)',
    method: 'GET',
    path: conv('/events'),
    id: () => own.conversation,
    ownerControl: true,
  },
  {
    name: 'GET /v1/conversations/:id/events + Last-Event-ID',
    method: 'GET',
    path: conv('/events'),
    id: () => own.conversation,
    headers: { 'last-event-id': '0-0' },
    ownerControl: true,
  },
  { name: 'GET /v1/turns/:id', method: 'GET', path: turn(), id: () => own.turn, ownerControl: true },
  {
    name: 'GET /v1/turns/:id/usage',
    method: 'GET',
    path: turn('/usage'),
    id: () => own.turn,
    ownerControl: true,
  },
  {
    name: 'GET /v1/turns/:id/trace',
    method: 'GET',
    path: turn('/trace'),
    id: () => own.turn,
    ownerControl: true,
  },
  {
    name: 'POST /v1/turns/:id/requests/:blockId',
    method: 'POST',
    path: (id) => `/v1/turns/${id}/requests/${own.block}`,
    id: () => own.turn,
    body: () => ({ approved: true }),
  },
  {
    name: 'POST /v1/turns/:turnId/requests/:id (block)',
    method: 'POST',
    path: (id) => `/v1/turns/${own.turn}/requests/${id}`,
    id: () => own.block,
    body: () => ({ approved: true }),
  },
  { name: 'POST /v1/turns/:id/cancel', method: 'POST', path: turn('/cancel'), id: () => own.turn },
  {
    name: 'GET /v1/attachments/:id',
    method: 'GET',
    path: (id) => `/v1/attachments/${id}`,
    id: () => own.attachment,
    ownerControl: true,
  },
  {
    name: 'POST /v1/attachments (conversationId)',
    method: 'POST',
    path: () => '/v1/attachments',
    id: () => own.conversation,
    multipart: true,
  },
  {
    name: 'POST /v1/conversations/:own/messages attachmentIds',
    method: 'POST',
    path: (_, caller) => `/v1/conversations/${theirs[caller]}/messages`,
    id: () => own.attachment,
    body: (id) => ({ text: 'see this', attachmentIds: [id] }),
    expected: [422, 'attachment_not_found'],
  },
  {
    name: "GET /v1/skills/:id (carol's private)",
    method: 'GET',
    path: (id) => `/v1/skills/${id}`,
    id: () => secretSkill,
  },
  {
    name: "PATCH /v1/skills/:id (carol's private)",
    method: 'PATCH',
    path: (id) => `/v1/skills/${id}`,
    id: () => secretSkill,
    body: () => ({ name: 'Mine' }),
  },
  {
    name: 'GET /v1/agents/:id',
    method: 'GET',
    path: (id) => `/v1/agents/${id}`,
    id: () => 'helper',
    visibleTo: ['bob', 'carol'],
    ownerControl: true,
  },
  // Same-org authors and admins may change org-wide items: the body leaves them as they are.
  {
    name: 'PATCH /v1/agents/:id',
    method: 'PATCH',
    path: (id) => `/v1/agents/${id}`,
    id: () => 'helper',
    body: () => ({ name: 'Helper' }),
    visibleTo: ['bob', 'carol'],
  },
  {
    name: 'GET /v1/skills/:id (org skill)',
    method: 'GET',
    path: (id) => `/v1/skills/${id}`,
    id: () => factCheck,
    visibleTo: ['bob', 'carol'],
    ownerControl: true,
  },
  {
    name: 'PATCH /v1/skills/:id (org skill)',
    method: 'PATCH',
    path: (id) => `/v1/skills/${id}`,
    id: () => factCheck,
    body: () => ({ name: 'Fact Check' }),
    visibleTo: ['bob', 'carol'],
  },
  {
    name: 'POST /v1/conversations {agentId}',
    method: 'POST',
    path: () => '/v1/conversations',
    id: () => 'helper',
    body: (id) => ({ agentId: id }),
    visibleTo: ['bob', 'carol'],
  },
];

async function call(probe: Probe, caller: E2EUser, id: string): Promise<RawResponse> {
  if (probe.multipart) {
    const form = new FormData();
    form.append('conversationId', id);
    form.append('file', new Blob(['not yours']), 'x.txt');
    const res = await fetch(`${e2e.portal.baseURL}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${E2E_KEYS[caller]}` },
      body: form,
    });
    return { status: res.status, headers: {}, text: await res.text() };
  }
  const body = probe.body?.(id, caller);
  return sendRaw(
    e2e.portal.baseURL,
    {
      method: probe.method,
      path: probe.path(id, caller),
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...probe.headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    },
    { apiKey: E2E_KEYS[caller] },
  );
}

const cell = (res: RawResponse) => `${res.status} ${codeOf(res) === '-' ? '' : codeOf(res)}`.trim();
const messageOf = (res: RawResponse) => {
  try {
    return String(JSON.parse(res.text)?.error?.message ?? '');
  } catch {
    return '';
  }
};

describe('tenancy sweep', () => {
  it("answers every endpoint called with another org's or another user's ids exactly as for a missing id: 404 not_found", async () => {
    const callers: E2EUser[] = ['mallory', 'bob', 'carol'];
    const rows: string[][] = [];
    const problems: string[] = [];
    for (const probe of probes) {
      const id = probe.id();
      const row = [probe.name];
      if (probe.ownerControl) row.push(cell(await call(probe, 'alice', id)));
      else row.push('-');
      for (const caller of callers) {
        // Carol owns the private skill: she is not a stranger to it.
        if (probe.name.includes("carol's private") && caller === 'carol') {
          row.push('(owner)');
          continue;
        }
        const [theirsRes, missingRes] = [
          await call(probe, caller, id),
          await call(probe, caller, missingId(id)),
        ];
        row.push(cell(theirsRes));
        if (probe.visibleTo?.includes(caller)) continue; // org-wide: legitimately visible
        const [status, code] = probe.expected ?? [404, 'not_found'];
        const likeMissing =
          theirsRes.status === missingRes.status &&
          codeOf(theirsRes) === codeOf(missingRes) &&
          messageOf(theirsRes).replaceAll(id, '<id>') ===
            messageOf(missingRes).replaceAll(missingId(id), '<id>');
        const roleFirst = theirsRes.status === 403 && codeOf(theirsRes) === 'forbidden' && likeMissing;
        if (!likeMissing)
          problems.push(
            `${probe.name} as ${caller}: ${cell(theirsRes)} but a missing id answers ${cell(missingRes)}`,
          );
        else if (!roleFirst && (theirsRes.status !== status || codeOf(theirsRes) !== code)) {
          problems.push(`${probe.name} as ${caller}: ${cell(theirsRes)}, expected ${status} ${code}`);
        }
      }
      rows.push(row);
    }
    console.log(
      [
        'Tenancy sweep: alice\'s resources called by others (cells: status and error code; "(org)" rows are org-wide,',
        'so same-org users may read them; 403 forbidden = the role check that comes before any lookup, as for a missing id)',
        textTable(
          [
            'endpoint',
            'alice (owner)',
            'mallory (other org)',
            'bob (same org, member)',
            'carol (same org, admin)',
          ],
          rows,
        ),
      ].join('\n'),
    );
    expect(problems).toEqual([]);

    // Nothing the others sent changed alice's turn, transcript or attachment.
    const turnNow = (await chat.api.get(`/v1/turns/${own.turn}`)).body;
    expect(turnNow.status).toBe('paused');
    const blocks = (await chat.messages(own.turn)).flatMap((m) => m.blocks);
    expect(blocks.some((b: any) => b.kind === 'text' && /let me in|see this/.test(b.text))).toBe(false);
    expect(blocks.find((b: any) => b.kind === 'approval_request')).toMatchObject({ approved: null });
    expect((await chat.api.get(`/v1/attachments/${own.attachment}`)).body.status).toBe('finished');
    expect((await chat.api.get('/v1/agents/helper')).body.name).toBe('Helper');
    expect((await chat.api.get(`/v1/skills/${factCheck}`)).body.name).toBe('Fact Check');
    expect((await e2e.api('carol').get(`/v1/skills/${secretSkill}`)).body.name).toBe('Secret');
    expect(e2e.tools.requests.filter((r) => r.path === '/deploy')).toEqual([]);
    // Lists never show another user's or org's items.
    for (const caller of callers) {
      const list = (await e2e.api(caller).get('/v1/conversations')).body as { id: string }[];
      expect(list.map((c) => c.id)).not.toContain(own.conversation);
    }
    expect(((await e2e.api('mallory').get('/v1/agents')).body as { id: string }[]).map((a) => a.id)).toEqual([
      'rival',
    ]);
    expect(
      ((await e2e.api('bob').get('/v1/skills')).body as { id: string }[]).map((s) => s.id),
    ).not.toContain(secretSkill);
  }, 120_000);
});

/** A missing id of the same shape as `id` (a uuid for a uuid, a slug for a slug). */
function missingId(id: string): string {
  return /^[0-9a-f-]{36}$/.test(id) ? MISSING : 'no-such-agent';
}
