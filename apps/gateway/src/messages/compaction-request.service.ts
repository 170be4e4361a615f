import { Inject, Injectable } from '@nestjs/common';
import { WindowRepository, type Conversation } from '@portal/dal';
import { DomainError, type Effort, type Turn } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { TurnDispatchService } from '../core/turn-dispatch.service';
import { TurnOpeningService } from './turn-opening.service';

export interface CompactionRequest {
  /** The conversation's open turn, if any. */
  open: Turn | null;
  /** `/compact` with its instructions, as typed. */
  text: string;
  attachmentIds: string[];
  effort: Effort;
  model: string;
}

/**
 * A message that is `/compact` (SPEC 5.1 manual compaction): the refusals of SPEC 5.3, then a
 * compaction turn whose `compact` job the compaction worker runs.
 */
@Injectable()
export class CompactionRequestService {
  constructor(
    @Inject(WindowRepository) private readonly windows: WindowRepository,
    @Inject(TurnOpeningService) private readonly opener: TurnOpeningService,
    @Inject(TurnDispatchService) private readonly dispatch: TurnDispatchService,
  ) {}

  async request(
    caller: Principal,
    conversation: Conversation,
    request: CompactionRequest,
  ): Promise<{ turnId: string; kind: 'compaction' }> {
    const refusal = await this.refusal(caller, conversation, request);
    if (refusal) throw new DomainError('compact_refused', `/compact is refused: ${refusal}`);
    const turn = await this.opener.open(
      caller,
      conversation,
      { kind: 'compaction', text: request.text, effort: request.effort, model: request.model },
      (turnId) => this.dispatch.compact(caller.orgId, turnId),
    );
    return { turnId: turn.id, kind: 'compaction' };
  }

  /** Which rule of SPEC 5.3 refuses the request, or null. */
  private async refusal(caller: Principal, conversation: Conversation, request: CompactionRequest) {
    if (request.open) return `the latest turn is ${request.open.status}`;
    if (request.attachmentIds.length) return 'it cannot carry attachments';
    if (!(await this.writtenSinceLastCompaction(caller.orgId, conversation.id))) {
      return 'nothing has been written since the last compaction';
    }
    return null;
  }

  /** A regular turn after the turns the newest summary covers. */
  private async writtenSinceLastCompaction(orgId: string, conversationId: string): Promise<boolean> {
    const window = await this.windows.readWindow(orgId, conversationId, { turnsReplayed: 1 });
    const latest = window.turns.at(-1)?.turn.n;
    return latest !== undefined && latest > (window.summary?.block.coversTurns.to ?? 0);
  }
}
