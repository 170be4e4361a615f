import {
  type ConversationId,
  DomainError,
  type Effort,
  type Message,
  type OrgId,
  type TextBlock,
  type Turn,
} from '@portal/domain';
import { parseLeadingSlugs } from '@portal/prompt';
import { QueueName } from '@portal/contracts';
import { JobRecord, type BullMqClient } from '@portal/queue';
import type { ConversationEvents } from '@portal/redis';
import { lastValueFrom } from 'rxjs';
import { CompactionRepository, DalError, TurnRepository, type Db } from '@portal/dal';
import { compactionJobId, MANUAL_REQUEST_ID } from './compaction-ids.util';

export interface ManualCompactionInput {
  conversationId: ConversationId;
  /** The message as typed: exactly `/compact`, optionally followed by instructions. */
  text: string;
  attachmentIds?: readonly string[];
  /** The winning effort, recorded on the turn. */
  effort: Effort;
  /** The turn's model (the agent's): the summary runs on it and is priced at it. */
  model: string;
}

export interface OpenedCompaction {
  turn: Turn;
  message: Message;
  requestId: string;
  jobId: string;
}

/** The three rules of SPEC 5.3, each with the message `compact_refused` carries. */
export const COMPACT_REFUSALS = {
  turn_open: (status: string) => `/compact is refused while the conversation's latest turn is ${status}`,
  nothing_written: () => '/compact is refused: nothing has been written since the last compaction',
  attachments: () => '/compact is refused: the message carries attachments',
} as const;

function refused(rule: keyof typeof COMPACT_REFUSALS, message: string): DomainError {
  return new DomainError('compact_refused', message, { rule });
}

/**
 * A manual `/compact` (SPEC 5.1, 5.3), for the gateway: refuses with `compact_refused` naming the
 * rule (recording nothing), else opens a `queued` turn of kind `compaction` with the person's
 * message in one transaction, publishes it when given the event stream, and enqueues
 * `compact` MANUAL for the compaction-worker, which summarises and settles the turn.
 */
export class CompactionRequests {
  constructor(
    private readonly db: Db,
    private readonly queues: BullMqClient,
    private readonly events: ConversationEvents | null = null,
  ) {}

  /** Throws DomainError `compact_refused` (details.rule) when a rule refuses the message. */
  async check(orgId: OrgId, input: Pick<ManualCompactionInput, 'conversationId' | 'attachmentIds'>) {
    const latest = await new TurnRepository(this.db).getLatest(orgId, input.conversationId);
    if (latest && ['queued', 'running', 'paused'].includes(latest.status)) {
      throw refused('turn_open', COMPACT_REFUSALS.turn_open(latest.status));
    }
    if (!(await new CompactionRepository(this.db).writtenSinceLastCompaction(orgId, input.conversationId))) {
      throw refused('nothing_written', COMPACT_REFUSALS.nothing_written());
    }
    if ((input.attachmentIds ?? []).length > 0) {
      throw refused('attachments', COMPACT_REFUSALS.attachments());
    }
  }

  async open(orgId: OrgId, input: ManualCompactionInput): Promise<OpenedCompaction> {
    if (!parseLeadingSlugs(input.text).isCompact) {
      throw new DomainError('validation_failed', 'Not a /compact message');
    }
    await this.check(orgId, input);
    let created: Awaited<ReturnType<TurnRepository['createWithUserMessage']>>;
    try {
      created = await new TurnRepository(this.db).createWithUserMessage(orgId, {
        conversationId: input.conversationId,
        kind: 'compaction',
        effort: input.effort,
        model: input.model,
        text: input.text,
      });
    } catch (err) {
      // Another message opened a turn between the check and the insert.
      if (err instanceof DalError && err.code === 'turn_active') {
        throw refused('turn_open', COMPACT_REFUSALS.turn_open('open'));
      }
      throw err;
    }
    if (!created) throw new DomainError('not_found', 'Conversation not found');
    const { turn, message } = created;
    if (this.events) {
      await this.events.publish(turn.conversationId, { type: 'turn_started', turnId: turn.id });
      await this.events.publish(turn.conversationId, {
        type: 'block_finished',
        turnId: turn.id,
        block: message.blocks[0] as TextBlock,
      });
      await this.events.publish(turn.conversationId, {
        type: 'turn_state',
        turnId: turn.id,
        status: 'queued',
      });
    }
    const requestId = MANUAL_REQUEST_ID;
    const jobId = compactionJobId(turn.id, requestId);
    const data = { orgId, turnId: turn.id, trigger: 'MANUAL', requestId } as const;
    await lastValueFrom(this.queues.emit(QueueName.Compactions, new JobRecord(data, { jobId })));
    return { turn, message, requestId, jobId };
  }
}
