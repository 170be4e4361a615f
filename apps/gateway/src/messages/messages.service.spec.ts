import { DataSource, type EntityManager } from 'typeorm';
import {
  AttachmentRepository,
  BlockRepository,
  ConversationRepository,
  DalError,
  PersonRequestRepository,
  SkillRepository,
  TurnRepository,
  type ConversationWithAgent,
  type Skill,
} from '@portal/dal';
import {
  AttachmentId,
  ConversationId,
  DomainError,
  TurnId,
  UserId,
  type AttachmentManifest,
  type Block,
  type Turn,
  type TurnStatus,
} from '@portal/domain';
import {
  ID as RECORD_ID,
  agentRecord,
  conversationRecord,
  modelEntry,
  newTestService,
  turnRecord,
} from '@portal/testing/unit';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { MetricsService } from '../metrics/metrics.service';
import { CompactionRequestService } from './compaction-request.service';
import { MessageChecksService } from './message-checks.service';
import { MessagesService } from './messages.service';
import { TurnOpeningService } from './turn-opening.service';

const ID = {
  ...RECORD_ID,
  otherUser: UserId('user-bob'),
  otherConversation: ConversationId('conv-2'),
  newTurn: TurnId('turn-2'),
};

// Only what the checks read of the gateway config: the model catalogue, one model that sees.
const CONFIG = {
  catalogue: [
    modelEntry({ id: 'seeing', vision: { maxLongSide: 2048, maxShortSide: 768 } }),
    modelEntry({ id: 'blind' }),
  ],
} as GatewayConfig;

const CALLER: Principal = { orgId: ID.org, userId: ID.user, role: 'member', via: 'apiKey' };

const AGENT = agentRecord({ model: 'seeing', effort: 'low' });

function found(over: Partial<ConversationWithAgent> = {}): ConversationWithAgent {
  return {
    conversation: conversationRecord(),
    agent: AGENT,
    activeTurnId: null,
    ...over,
  };
}

const skill = (slug: string, over: Partial<Skill> = {}): Skill => ({
  orgId: ID.org,
  id: `skill-${slug}`,
  slug,
  name: slug,
  description: `The ${slug} skill.`,
  instructions: `Instructions of ${slug}.`,
  visibility: 'org',
  ownerId: ID.user,
  status: 'active',
  published: true,
  ...over,
});

const manifest = (id: string, kind: 'document' | 'picture'): AttachmentManifest => ({
  id: AttachmentId(id),
  kind,
  filename: `${id}.bin`,
  mimeType: kind === 'picture' ? 'image/png' : 'application/pdf',
  status: 'finished',
  pagesRead: 1,
  pageCount: 1,
  unreadablePages: [],
  headings: [],
  chars: 10,
  picture: kind === 'picture' ? { width: 10, height: 10, originalWidth: 10, originalHeight: 10 } : null,
  error: null,
});

const turn = (status: TurnStatus, over: Partial<Turn> = {}): Turn =>
  turnRecord({
    status,
    effort: 'low',
    model: 'seeing',
    ...over,
  });

function setup() {
  const { sut, mocks } = newTestService(MessagesService, {
    // The checks, the ownership rule and the opening are the service's rules: built for real.
    real: [OwnershipService, MessageChecksService, TurnOpeningService],
    provide: [[GATEWAY_CONFIG, CONFIG]],
    mocks: {
      dataSource: DataSource,
      conversations: ConversationRepository,
      turns: TurnRepository,
      blocks: BlockRepository,
      skills: SkillRepository,
      attachments: AttachmentRepository,
      dispatch: TurnDispatchService,
      compaction: CompactionRequestService,
      metrics: MetricsService,
    },
    // What the steering transaction writes through, on its own manager.
    constructed: { locked: TurnRepository, appended: BlockRepository, requests: PersonRequestRepository },
  });
  mocks.conversations.getWithAgent.mockResolvedValue(found());
  mocks.skills.findBySlugs.mockResolvedValue([]);
  mocks.dataSource.transaction.mockImplementation(((work: (em: EntityManager) => unknown) =>
    work({} as EntityManager)) as never);
  mocks.turns.createForPerson.mockImplementation(async (_org, _user, input) => ({
    turn: turn('queued', { id: ID.newTurn }),
    message: {
      id: 'msg-1',
      turnId: ID.newTurn,
      role: 'user',
      attachmentIds: input.attachmentIds ?? [],
      blocks: [{ id: 'b-1', seq: 1, kind: 'text', text: input.text, narration: false, steering: false }],
    },
  }));
  return { sut, mocks };
}

type Mocks = ReturnType<typeof setup>['mocks'];

/** Nothing reached the transcript, the queue or the event stream. */
async function expectNothingRecorded(mocks: Mocks) {
  // An opening refused by the database (an open turn) records nothing; none may have opened.
  const opened = await Promise.allSettled(mocks.turns.createForPerson.mock.results.map((r) => r.value));
  expect(opened.filter((o) => o.status === 'fulfilled' && o.value)).toEqual([]);
  expect(mocks.appended.append).not.toHaveBeenCalled();
  expect(mocks.compaction.request).not.toHaveBeenCalled();
  expect(mocks.dispatch.runTurn).not.toHaveBeenCalled();
  expect(mocks.dispatch.publish).not.toHaveBeenCalled();
}

/** The attachments the repository knows: who uploaded each, where, and what it is. */
function givenAttachments(
  mocks: Mocks,
  ...rows: {
    id: string;
    userId?: UserId;
    conversationId?: ConversationId | null;
    kind?: 'document' | 'picture';
  }[]
) {
  mocks.attachments.getScopes.mockResolvedValue(
    rows.map((r) => ({ id: r.id, userId: r.userId ?? ID.user, conversationId: r.conversationId ?? null })),
  );
  mocks.attachments.getManifests.mockImplementation(async (_org, ids) =>
    ids.map((id) => manifest(id, rows.find((r) => r.id === id)?.kind ?? 'document')),
  );
}

const post = (sut: MessagesService, body: { text: string; attachmentIds?: string[]; effort?: 'high' }) =>
  sut.post(CALLER, ID.conversation, { attachmentIds: [], ...body });

const rejection = (code: string, details?: Record<string, unknown>) =>
  expect.objectContaining({ code, ...(details && { details }) });

afterEach(() => jest.restoreAllMocks());

describe('MessagesService: a message that opens a turn', () => {
  it("opens a plain message's turn in one statement scoped to the caller, with no read before it", async () => {
    const { sut, mocks } = setup();

    await expect(post(sut, { text: 'hello' })).resolves.toEqual({ turnId: ID.newTurn, kind: 'turn' });

    // The agent's model, effort and catalogue are the statement's to read (TurnRepository).
    expect(mocks.turns.createForPerson).toHaveBeenCalledWith(ID.org, ID.user, {
      conversationId: ID.conversation,
      text: 'hello',
      attachmentIds: [],
      effort: undefined,
      selectedSkillIds: [],
      afterTurnN: undefined,
    });
    expect(mocks.conversations.getWithAgent).not.toHaveBeenCalled();
    expect(mocks.dispatch.runTurn).toHaveBeenCalledWith(ID.org, ID.newTurn, 'open');
  });

  it.each([
    ['a plain message', { text: 'hello' }],
    ['a message with skills', { text: '/fact hello' }],
  ])(
    "answers not_found for a conversation outside the caller's org or not the caller's, recording nothing: %s",
    async (_, body) => {
      const { sut, mocks } = setup();
      // Both lookups are scoped to the caller; what they cannot find does not exist for them.
      mocks.turns.createForPerson.mockResolvedValue(null);
      mocks.conversations.getWithAgent.mockResolvedValue(null);
      await expect(post(sut, body)).rejects.toEqual(rejection('not_found'));
      if (body.text.startsWith('/')) {
        expect(mocks.conversations.getWithAgent).toHaveBeenCalledWith(ID.org, ID.conversation, {
          userId: ID.user,
        });
      }
      expect(mocks.dispatch.runTurn).not.toHaveBeenCalled();
      expect(mocks.dispatch.publish).not.toHaveBeenCalled();
    },
  );

  it('opens a turn with the text as typed and the selected skills in typed order', async () => {
    const { sut, mocks } = setup();
    mocks.skills.findBySlugs.mockResolvedValue([skill('fact'), skill('style')]);

    const result = await post(sut, { text: '/style /fact compare these', effort: 'high' });

    expect(result).toEqual({ turnId: ID.newTurn, kind: 'turn' });
    expect(mocks.dispatch.runTurn).toHaveBeenCalledWith(ID.org, ID.newTurn, 'open');
    expect(mocks.skills.findBySlugs).toHaveBeenCalledWith(ID.org, ['style', 'fact']);
    expect(mocks.turns.createForPerson).toHaveBeenCalledWith(ID.org, ID.user, {
      conversationId: ID.conversation,
      text: '/style /fact compare these',
      attachmentIds: [],
      effort: 'high',
      selectedSkillIds: ['skill-style', 'skill-fact'],
      afterTurnN: undefined,
    });
  });

  it.each([
    ['an inactive', [skill('fact', { status: 'inactive' })]],
    ["another user's private", [skill('fact', { visibility: 'private', ownerId: ID.otherUser })]],
    ['an unknown', []],
  ])('rejects the whole message over %s skill, naming its slug', async (_, known) => {
    const { sut, mocks } = setup();
    mocks.skills.findBySlugs.mockResolvedValue([skill('style'), ...known]);
    await expect(post(sut, { text: '/style /fact go' })).rejects.toEqual(
      rejection('skill_rejected', { slug: 'fact' }),
    );
    await expectNothingRecorded(mocks);
  });

  it.each<[string, boolean, { userId?: UserId; conversationId?: ConversationId | null }]>([
    ['unbound and the caller’s', true, {}],
    ['bound to this conversation', true, { conversationId: ID.conversation }],
    ['bound to another conversation', false, { conversationId: ID.otherConversation }],
    ['uploaded by another user', false, { userId: ID.otherUser }],
  ])('an attachment %s is usable: %s', async (_, usable, scope) => {
    const { sut, mocks } = setup();
    givenAttachments(mocks, { id: 'doc-1', ...scope });
    const sent = post(sut, { text: 'read this', attachmentIds: ['doc-1', 'doc-1'] });
    if (usable) {
      await sent;
      // Each attachment once, in the order given.
      expect(mocks.turns.createForPerson).toHaveBeenCalledWith(
        ID.org,
        ID.user,
        expect.objectContaining({ attachmentIds: ['doc-1'] }),
      );
    } else {
      await expect(sent).rejects.toEqual(rejection('attachment_not_found', { attachmentId: 'doc-1' }));
      await expectNothingRecorded(mocks);
    }
    expect(mocks.attachments.getScopes).toHaveBeenCalledWith(ID.org, ['doc-1']);
  });

  it('refuses a picture for an agent whose model cannot see, naming the model; a document passes', async () => {
    const { sut, mocks } = setup();
    mocks.conversations.getWithAgent.mockResolvedValue(found({ agent: { ...AGENT, model: 'blind' } }));
    givenAttachments(mocks, { id: 'pic-1', kind: 'picture' }, { id: 'doc-1' });
    await expect(post(sut, { text: 'look', attachmentIds: ['doc-1', 'pic-1'] })).rejects.toEqual(
      rejection('model_cannot_see', { model: 'blind' }),
    );
    await expectNothingRecorded(mocks);

    await expect(post(sut, { text: 'read', attachmentIds: ['doc-1'] })).resolves.toMatchObject({
      kind: 'turn',
    });
  });
});

describe('MessagesService: a message while a turn is open', () => {
  const steeringBlock: Block = {
    id: 'b-2',
    seq: 2,
    kind: 'text',
    text: '',
    narration: false,
    steering: true,
  };

  function whileOpen(mocks: Mocks, status: TurnStatus, over: Partial<Turn> = {}) {
    mocks.conversations.getWithAgent.mockResolvedValue(found({ activeTurnId: ID.turn }));
    // The conversation's one open turn refuses another (the database's unique index).
    mocks.turns.createForPerson.mockRejectedValue(new DalError('turn_active', 'busy'));
    mocks.locked.lockForUpdate.mockResolvedValue({
      turn: turn(status, over),
      leaseOwner: null,
      cancelRequested: false,
      leaseLive: false,
    });
    mocks.appended.append.mockImplementation(async (_org, turnId, [draft]) => ({
      message: { id: 'msg-2', turnId, role: 'user', attachmentIds: [], blocks: [] },
      blocks: [{ ...steeringBlock, text: draft.kind === 'text' ? draft.text : '' }],
      written: true,
    }));
  }

  it('steers a running turn: a steering text block in a new user message, recorded as typed and published', async () => {
    const { sut, mocks } = setup();
    whileOpen(mocks, 'running');

    const result = await post(sut, { text: '/fact also check Q4' });

    expect(result).toEqual({ turnId: ID.turn, steered: true });
    expect(mocks.locked.lockForUpdate).toHaveBeenCalledWith(ID.org, ID.turn);
    expect(mocks.appended.append).toHaveBeenCalledWith(
      ID.org,
      ID.turn,
      [{ kind: 'text', text: '/fact also check Q4', narration: false, steering: true }],
      { into: 'user', attachmentIds: [] },
    );
    // A steering message is a request of the person, slugs and all: the model reads it so.
    expect(mocks.requests.record).toHaveBeenCalledWith(ID.org, {
      conversationId: ID.conversation,
      turnN: 1,
      messageId: 'msg-2',
      seq: 2,
      typed: '/fact also check Q4',
      steering: true,
    });
    expect(mocks.dispatch.publish).toHaveBeenCalledWith(ID.conversation, [
      { type: 'block_finished', turnId: ID.turn, block: { ...steeringBlock, text: '/fact also check Q4' } },
    ]);
    // Steering selects no skill and opens no turn.
    expect(mocks.skills.findBySlugs).not.toHaveBeenCalled();
    expect(mocks.turns.createForPerson).not.toHaveBeenCalled();
    expect(mocks.dispatch.runTurn).not.toHaveBeenCalled();
  });

  it("checks a steering picture against the running turn's model, not the agent's current one", async () => {
    const { sut, mocks } = setup();
    whileOpen(mocks, 'running', { model: 'blind' });
    givenAttachments(mocks, { id: 'pic-1', kind: 'picture' });
    await expect(post(sut, { text: 'and this', attachmentIds: ['pic-1'] })).rejects.toEqual(
      rejection('model_cannot_see', { model: 'blind' }),
    );
    expect(mocks.requests.record).not.toHaveBeenCalled();
    await expectNothingRecorded(mocks);
  });

  it('refuses a plain message while the turn is paused with turn_paused', async () => {
    const { sut, mocks } = setup();
    whileOpen(mocks, 'paused');
    await expect(post(sut, { text: 'hello?' })).rejects.toEqual(
      rejection('turn_paused', { turnId: ID.turn }),
    );
    await expectNothingRecorded(mocks);
  });

  it('never steers with /compact: the compaction request, which holds its refusals, gets it', async () => {
    const { sut, mocks } = setup();
    whileOpen(mocks, 'running');
    mocks.compaction.request.mockRejectedValue(new DomainError('compact_refused', 'turn 1 is running'));
    await expect(post(sut, { text: '/compact keep figures' })).rejects.toEqual(rejection('compact_refused'));
    expect(mocks.locked.lockForUpdate).not.toHaveBeenCalled();
    expect(mocks.compaction.request).toHaveBeenCalledWith(CALLER, found().conversation, {
      text: '/compact keep figures',
      attachmentIds: [],
      effort: AGENT.effort,
      model: AGENT.model,
    });
  });

  it('reads again and decides again when another request opened a turn first', async () => {
    const { sut, mocks } = setup();
    mocks.skills.findBySlugs.mockResolvedValue([skill('fact')]);
    whileOpen(mocks, 'queued');
    // The first read saw no open turn; by the insert another request had opened one.
    mocks.conversations.getWithAgent.mockResolvedValueOnce(found());

    await expect(post(sut, { text: '/fact also this' })).resolves.toEqual({
      turnId: ID.turn,
      steered: true,
    });
    expect(mocks.conversations.getWithAgent).toHaveBeenCalledTimes(2);
  });

  it('gives up after three lost races', async () => {
    const { sut, mocks } = setup();
    mocks.turns.createForPerson.mockRejectedValue(new DalError('turn_active', 'busy'));
    await expect(post(sut, { text: 'hello' })).rejects.toMatchObject({ code: 'turn_active' });
    expect(mocks.conversations.getWithAgent).toHaveBeenCalledTimes(3);
  });
});
