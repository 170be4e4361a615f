import { OrgId } from '@portal/domain';
import { randomUUID } from 'node:crypto';
import { SkillRepository } from '@portal/dal';
import {
  attachment,
  newConversation,
  openTurn,
  pauseWithRequest,
  startGateway,
  type Harness,
  type Who,
} from '../test/gateway-harness.util';

let gw: Harness;
/** Alice's resources in acme. */
let own: { conversation: string; turn: string; request: string; skill: string; attachment: string };
beforeAll(async () => {
  gw = await startGateway();
  const conversation = await newConversation(gw, 'alice');
  const turn = await openTurn(gw, conversation);
  const request = (await pauseWithRequest(gw, turn, 'clarification_request')).id;
  const [skill] = await new SkillRepository(gw.db.dataSource).findBySlugs(OrgId('acme'), ['fact-check']);
  own = {
    conversation,
    turn,
    request,
    skill: skill.id,
    attachment: await attachment(gw, { userId: 'alice' }),
  };
});
afterAll(async () => {
  await gw?.close();
});

type Probe = [method: string, path: (id: string) => string, body?: unknown];

/** Every endpoint that names a conversation or a turn. */
const conversationProbes: Probe[] = [
  ['GET', (id) => `/v1/conversations/${id}`],
  ['PATCH', (id) => `/v1/conversations/${id}`, { title: 'Renamed' }],
  ['DELETE', (id) => `/v1/conversations/${id}`],
  ['GET', (id) => `/v1/conversations/${id}/messages`],
  ['POST', (id) => `/v1/conversations/${id}/messages`, { text: 'hi' }],
  ['GET', (id) => `/v1/conversations/${id}/events`],
  ['GET', (id) => `/v1/conversations/${id}/prompt-preview`],
];
const turnProbes: Probe[] = [
  ['GET', (id) => `/v1/turns/${id}`],
  ['GET', (id) => `/v1/turns/${id}/usage`],
  ['GET', (id) => `/v1/turns/${id}/trace`],
  ['POST', (id) => `/v1/turns/${id}/requests/${own.request}`, { answer: 'x' }],
  ['POST', (id) => `/v1/turns/${id}/cancel`],
  ['POST', (id) => `/v1/turns/${id}/retry`],
];

/** The same answer as for a missing id: 404 not_found, the message differing only by the id. */
async function expectLikeMissing(as: Who, [method, path, body]: Probe, id: string) {
  const missing = randomUUID();
  const [theirs, absent] = await Promise.all([
    gw.call(method, path(id), { as, body }),
    gw.call(method, path(missing), { as, body }),
  ]);
  expect({ path: path(id), status: theirs.status }).toEqual({ path: path(id), status: 404 });
  expect(theirs.body.error.code).toBe('not_found');
  expect(theirs.body.error.message.replace(id, '<id>')).toBe(
    absent.body.error.message.replace(missing, '<id>'),
  );
}

describe('tenancy', () => {
  it.each<Who>(['mallory', 'dave'])(
    "hides alice's conversation and turn from %s on every endpoint",
    async (who) => {
      for (const probe of conversationProbes) await expectLikeMissing(who, probe, own.conversation);
      for (const probe of turnProbes) await expectLikeMissing(who, probe, own.turn);
    },
  );

  it("hides another org's agents and skills", async () => {
    await expectLikeMissing('mallory', ['GET', (id) => `/v1/agents/${id}`], 'researcher');
    await expectLikeMissing('mallory', ['PATCH', (id) => `/v1/agents/${id}`, { name: 'Mine' }], 'researcher');
    await expectLikeMissing('mallory', ['GET', (id) => `/v1/skills/${id}`], own.skill);
    await expectLikeMissing('mallory', ['PATCH', (id) => `/v1/skills/${id}`, { name: 'Mine' }], own.skill);
    const conversation = await gw.call('POST', '/v1/conversations', {
      as: 'mallory',
      body: { agentId: 'researcher' },
    });
    expect(conversation.status).toBe(404);
    expect(
      (await gw.call('GET', '/v1/agents', { as: 'mallory' })).body.map((a: { id: string }) => a.id),
    ).toEqual(['rival']);
  });

  it("refuses another org's or user's attachment in a message as attachment_not_found", async () => {
    for (const who of ['mallory', 'dave'] as const) {
      const conversation = await newConversation(gw, who, who === 'mallory' ? 'rival' : 'researcher');
      const res = await gw.call('POST', `/v1/conversations/${conversation}/messages`, {
        as: who,
        body: { text: 'see', attachmentIds: [own.attachment] },
      });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('attachment_not_found');
    }
  });

  it('leaves what the others could not reach unchanged', async () => {
    const turn = await gw.call('GET', `/v1/turns/${own.turn}`);
    expect(turn.body.status).toBe('paused');
    const agent = await gw.call('GET', '/v1/agents/researcher');
    expect(agent.body.name).toBe('Researcher');
  });
});
