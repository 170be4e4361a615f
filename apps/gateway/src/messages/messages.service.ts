import { Inject, Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import {
  BlockRepository,
  DalError,
  PersonRequestRepository,
  TurnRepository,
  type Conversation,
} from '@portal/dal';
import { type ConversationId, DomainError, type Turn, type TurnId, type TurnStatus } from '@portal/domain';
import { parseLeadingSlugs } from '@portal/prompt';
import { OwnershipService } from '../common/ownership.service';
import type { Principal } from '../common/principal.types';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { CompactionRequestService } from './compaction-request.service';
import { MessageChecksService } from './message-checks.service';
import type { PostMessage, PostMessageResult } from '@portal/contracts';
import { retryRefused, TurnOpeningService } from './turn-opening.service';

/** Another writer took the message position: read again and decide again. */
class RaceLost extends Error {}

const ATTEMPTS = 3;

/** The endings a turn may be retried from (API.md `POST /v1/turns/:id/retry`). */
const RETRYABLE: readonly TurnStatus[] = ['failed', 'cut_off'];

/** `POST /v1/conversations/:id/messages`: a new turn, a steering message, or `/compact`. */
@Injectable()
export class MessagesService {
  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(OwnershipService) private readonly owned: OwnershipService,
    @Inject(MessageChecksService) private readonly checks: MessageChecksService,
    @Inject(TurnOpeningService) private readonly opener: TurnOpeningService,
    @Inject(CompactionRequestService) private readonly compaction: CompactionRequestService,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
    @Inject(TurnRepository) private readonly turns: TurnRepository,
    @Inject(BlockRepository) private readonly blocks: BlockRepository,
  ) {}

  /**
   * `POST /v1/turns/:id/retry`: the person's message of the latest turn, failed or cut off, sent
   * again as it was (text, attachments, the turn's effort), through the checks and the path of
   * any message. It never steers: a turn opened meanwhile refuses the retry.
   */
  async retry(caller: Principal, turnId: TurnId): Promise<{ turnId: string }> {
    const turn = await this.owned.turn(caller, turnId);
    const latest = await this.turns.getLatest(caller.orgId, turn.conversationId);
    if (latest?.id !== turn.id || !RETRYABLE.includes(turn.status)) throw retryRefused(turn.n);
    const [sent] = await this.blocks.listTurnMessages(caller.orgId, turn.id);
    const first = sent?.role === 'user' ? sent.blocks[0] : undefined;
    if (first?.kind !== 'text') throw retryRefused(turn.n);
    const body = { text: first.text, attachmentIds: sent.attachmentIds, effort: turn.effort };
    const { turnId: opened } = await this.post(caller, turn.conversationId, body, turn);
    return { turnId: opened };
  }

  async post(
    caller: Principal,
    conversationId: ConversationId,
    body: PostMessage,
    retrying?: Turn,
  ): Promise<PostMessageResult> {
    const message = { ...body, attachmentIds: [...new Set(body.attachmentIds)] };
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.postOnce(caller, conversationId, message, retrying);
      } catch (err) {
        const raced = err instanceof RaceLost || isTurnActive(err);
        if (!raced || attempt === ATTEMPTS) throw err;
      }
    }
  }

  private async postOnce(
    caller: Principal,
    conversationId: ConversationId,
    body: PostMessage,
    retrying?: Turn,
  ): Promise<PostMessageResult> {
    const parsed = parseLeadingSlugs(body.text);
    // Most messages need no read before their turn opens: no skills or attachments to check, and
    // the opening statement reads the agent itself. One for a conversation with an open turn
    // (it steers that turn) finds it taken and goes the long way.
    if (!retrying && !parsed.isCompact && !parsed.slugs.length && !body.attachmentIds.length) {
      const opened = await this.openTurn(caller, conversationId, body).catch(nullIfTurnActive);
      if (opened) return opened;
    }

    const { conversation, agent, activeTurnId } = await this.owned.conversationWithAgent(
      caller,
      conversationId,
    );
    if (retrying && activeTurnId) throw retryRefused(retrying.n);
    if (!parsed.isCompact && activeTurnId) {
      const steered = await this.steer(caller, conversation, activeTurnId, body);
      if (steered) return steered;
    }

    const selected = await this.checks.selectSkills(caller, parsed.slugs);
    const manifests = await this.checks.attachmentsOf(caller, conversation.id, body.attachmentIds);
    this.checks.vision(agent.model, manifests);

    if (parsed.isCompact) {
      return this.compaction.request(caller, conversation, {
        text: body.text,
        attachmentIds: body.attachmentIds,
        effort: body.effort ?? agent.effort,
        model: agent.model,
      });
    }
    return this.openTurn(
      caller,
      conversationId,
      body,
      selected.map((s) => s.id),
      retrying?.n,
    );
  }

  /** A regular turn on its agent's terms (`TurnOpeningService`), its job enqueued. */
  private async openTurn(
    caller: Principal,
    conversationId: ConversationId,
    body: PostMessage,
    selectedSkillIds: string[] = [],
    afterTurnN?: number,
  ): Promise<PostMessageResult> {
    const turn = await this.opener.open(
      caller,
      {
        conversationId,
        text: body.text,
        attachmentIds: body.attachmentIds,
        effort: body.effort,
        selectedSkillIds,
        afterTurnN,
      },
      (turnId) => this.dispatch.runTurn(caller.orgId, turnId, 'open'),
    );
    return { turnId: turn.id, kind: 'turn' };
  }

  /**
   * Turn protocol step 3, decided under the turn row's lock in the transaction that appends, so the
   * turn cannot pause or settle in between: a queued or running turn gets a new user message
   * holding one steering text block; a paused one refuses with `turn_paused`; a settled one is not
   * steered (null: the message opens a new turn).
   */
  private async steer(
    caller: Principal,
    conversation: Conversation,
    turnId: TurnId,
    body: PostMessage,
  ): Promise<PostMessageResult | null> {
    const block = await this.dataSource.transaction(async (em) => {
      const turn = (await new TurnRepository(em).lockForUpdate(caller.orgId, turnId))?.turn;
      if (turn?.status === 'paused') {
        throw new DomainError('turn_paused', `Turn ${turn.n} is waiting for an answer to its request`, {
          turnId: turn.id,
        });
      }
      if (turn?.status !== 'queued' && turn?.status !== 'running') return null;
      const manifests = await this.checks.attachmentsOf(caller, conversation.id, body.attachmentIds);
      this.checks.vision(turn.model, manifests);
      const appended = await new BlockRepository(em).append(
        caller.orgId,
        turn.id,
        [{ kind: 'text', text: body.text, narration: false, steering: true }],
        { into: 'user', attachmentIds: body.attachmentIds },
      );
      if (!appended) throw new RaceLost();
      const { message, blocks } = appended;
      const steering = blocks[0];
      await new PersonRequestRepository(em).record(caller.orgId, {
        conversationId: conversation.id,
        turnN: turn.n,
        messageId: message.id,
        seq: steering.seq,
        typed: body.text,
        steering: true,
      });
      return steering;
    });
    if (!block) return null;
    await this.dispatch.publish(conversation.id, [{ type: 'block_finished', turnId, block }]);
    return { turnId, steered: true };
  }
}

/** DalError `turn_active`: another request opened the conversation's turn first. */
function isTurnActive(err: unknown): boolean {
  return err instanceof DalError && err.code === 'turn_active';
}

function nullIfTurnActive(err: unknown): null {
  if (isTurnActive(err)) return null;
  throw err;
}
