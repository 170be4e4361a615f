import type { CompactionBlock, MemoryWindow, Message, TurnKind, TurnStatus } from '@portal/domain';
import { DEFAULT_LIMITS } from '@portal/prompt';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { type BlockRow, toBlock } from '../mappers/block.mapper';
import { MESSAGE_BLOCK_COLUMNS, messagesOf } from './block.repository';

export interface WindowOptions {
  /**
   * How many settled turns after the summary to return, newest kept (pass the configured
   * TURNS_REPLAYED; the default is the built-in one). Infinity: all of them, for the compaction.
   */
  turnsReplayed?: number;
  /** The current turn: only turns (and summaries) numbered before it are past. */
  beforeTurnN?: number;
}

const NO_LIMIT = 2_147_483_647;

/**
 * What memory reads of a conversation (SPEC 4) in at most three indexed queries, whatever the
 * conversation's length:
 * 1. the newest compaction block before the current turn (first entry of the partial index
 *    `blocks_compaction_idx`);
 * 2. the last `turnsReplayed` settled turns (`kind = 'turn'`, completed / failed / cut_off) from
 *    the summary's turn on and before the current turn (`turns_replayable_idx`, read backwards);
 * 3. those turns' messages by `turn_id = ANY(...)` (the `(turn_id, seq)` key) with their blocks.
 *
 * A manual compaction turn is kind `compaction`, so it is never among the turns. An AUTO summary
 * sits inside a normal turn: that turn's answer came after the summary was written, so the turn is
 * returned (first, with `turn.n === summary.turnN`) and the prompt replays what follows the block.
 * A compaction inside the current turn is not the window's: the current turn's messages carry it.
 */
export class WindowRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  async readWindow(orgId: string, conversationId: string, opts: WindowOptions = {}): Promise<MemoryWindow> {
    if (!isUuid(conversationId)) return { summary: null, turns: [] };
    const before = opts.beforeTurnN ?? NO_LIMIT;
    const limit = Math.min(opts.turnsReplayed ?? DEFAULT_LIMITS.TURNS_REPLAYED, NO_LIMIT);

    const [compaction]: (BlockRow & { turnN: number })[] = await this.em.query(
      `SELECT id, seq, kind, payload, turn_n AS "turnN" FROM blocks
       WHERE conversation_id = $2 AND kind = 'compaction' AND turn_n < $3 AND org_id = $1
       ORDER BY turn_n DESC, seq DESC LIMIT 1`,
      [orgId, conversationId, before],
    );
    const summary = compaction
      ? { turnN: compaction.turnN, block: toBlock(compaction) as CompactionBlock }
      : null;

    const turns: { id: string; n: number; kind: TurnKind; status: TurnStatus }[] = await this.em.query(
      `SELECT id, n, kind, status FROM turns
       WHERE conversation_id = $2 AND kind = 'turn' AND status IN ('completed', 'failed', 'cut_off')
         AND n >= $3 AND n < $4 AND org_id = $1
       ORDER BY n DESC LIMIT $5`,
      [orgId, conversationId, summary?.turnN ?? 1, before, limit],
    );
    if (!turns.length) return { summary, turns: [] };
    turns.reverse();

    const rows = await this.em.query(
      `SELECT ${MESSAGE_BLOCK_COLUMNS}
       FROM messages m LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = $1
       WHERE m.turn_id = ANY($2::uuid[]) AND m.org_id = $1 ORDER BY m.turn_id, m.seq, b.seq`,
      [orgId, turns.map((t) => t.id)],
    );
    const byTurn = new Map(turns.map((t) => [t.id, [] as Message[]]));
    for (const message of messagesOf(rows)) byTurn.get(message.turnId)?.push(message);
    return { summary, turns: turns.map((turn) => ({ turn, messages: byTurn.get(turn.id) ?? [] })) };
  }
}
