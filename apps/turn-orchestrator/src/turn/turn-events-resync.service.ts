import { Inject, Injectable, Logger } from '@nestjs/common';
import type { PortalEvent } from '@portal/contracts';
import { BlockRepository } from '@portal/dal';
import { isTerminal, type OrgId, type Turn } from '@portal/domain';
import { ConversationEvents } from '@portal/redis';
import { DataSource } from 'typeorm';

/**
 * A write's event is published after it commits (turn protocol), so a worker killed between the
 * two leaves a stored block, or a settled turn, that no client following the stream will ever
 * see. The run that comes next for the turn (a takeover, or the killed job delivered again to a
 * settled turn) publishes what the stream lacks: `block_finished` for each stored block it never
 * carried, and the turn's end. After Redis lost its data that is every block of a turn begun
 * before: a client that followed the stream live gets such a block again (same id, same
 * content), one that reconnects after the loss gets what it would have missed.
 */
@Injectable()
export class TurnEventsResync {
  private readonly logger = new Logger(TurnEventsResync.name);

  constructor(
    @Inject(DataSource) private readonly dataSource: DataSource,
    @Inject(ConversationEvents) private readonly events: ConversationEvents,
  ) {}

  /**
   * Returns how many events it published. What looks missing is looked at again after `graceMs`,
   * so a worker that is still publishing (a cancel job racing the turn's end) is not repeated.
   */
  async resync(orgId: OrgId, turn: Turn, graceMs = 1_000): Promise<number> {
    try {
      let missing = await this.missing(orgId, turn);
      if (!missing.length) return 0;
      await new Promise((resolve) => setTimeout(resolve, graceMs));
      missing = await this.missing(orgId, turn);
      for (const event of missing) await this.events.publish(turn.conversationId, event);
      if (missing.length)
        this.logger.warn(`turn ${turn.id}: published ${missing.length} event(s) its stream lacked`);
      return missing.length;
    } catch (err) {
      // Never in the turn's way: the transcript in Postgres is whole either way.
      this.logger.warn(`turn ${turn.id}: events not resynced (${(err as Error).message})`);
      return 0;
    }
  }

  private async missing(orgId: OrgId, turn: Turn): Promise<PortalEvent[]> {
    const streamed = await this.events.turnEvents(turn.conversationId, turn.id);
    if (!streamed) return [];
    const published = new Set<string>();
    let finished = false;
    for (const { event } of streamed) {
      if (event.type === 'block_finished' || event.type === 'compaction_finished')
        published.add(event.block.id);
      if (event.type === 'turn_finished') finished = true;
    }
    const messages = await new BlockRepository(this.dataSource).listTurnMessages(orgId, turn.id);
    const missing: PortalEvent[] = messages
      .flatMap((m) => m.blocks)
      .filter((block) => !published.has(block.id))
      .map((block) => ({ type: 'block_finished', turnId: turn.id, block }));
    if (isTerminal(turn.status) && !finished) {
      missing.push(
        { type: 'turn_state', turnId: turn.id, status: turn.status },
        {
          type: 'turn_finished',
          turnId: turn.id,
          status: turn.status,
          ...(turn.error !== null && { error: turn.error }),
        },
      );
    }
    return missing;
  }
}
