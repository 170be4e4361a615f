import type { Block, TurnStatus } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf } from '../db.util';
import { type NewBlock, toBlock } from '../mappers/block.mapper';
import type { UsageRow } from '../records.types';
import { BLOCK_COLUMNS, BlockRepository, type StoredBlockRow } from '../repositories/block.repository';
import { UsageRepository } from '../repositories/usage.repository';

/** A block whose id the writer chose (derived from its request), so writing it twice finds it. */
export type KeyedBlock = NewBlock & { id: string };

/** The reads and writes of compaction that no other repository has. */
export class CompactionRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /**
   * Whether anything was written in a regular turn after the conversation's newest compaction block
   * (or at all, when there is none). The portal's "Context summarised" line and a `/compact` message
   * are a compaction turn's own and do not count. Reads the newest compaction by
   * `blocks_compaction_idx`, then the turns after it by `(conversation_id, n)`, each probed for a
   * block by `(turn_id, seq)` (a subquery with LIMIT stays a probe: a join could be planned as a
   * merge over every block of the table).
   */
  async writtenSinceLastCompaction(orgId: string, conversationId: string): Promise<boolean> {
    if (!isUuid(conversationId)) return false;
    const [row]: { written: boolean }[] = await this.em.query(
      `WITH c AS (
         SELECT turn_n, seq FROM blocks
         WHERE conversation_id = $2 AND kind = 'compaction' AND org_id = $1
         ORDER BY turn_n DESC, seq DESC LIMIT 1
       )
       SELECT EXISTS (
         SELECT 1 FROM turns t
         WHERE t.conversation_id = $2 AND t.org_id = $1 AND t.kind = 'turn'
           AND t.n >= COALESCE((SELECT turn_n FROM c), 0)
           AND (SELECT 1 FROM blocks b
                WHERE b.turn_id = t.id
                  AND (t.n > COALESCE((SELECT turn_n FROM c), 0) OR b.seq > (SELECT seq FROM c))
                LIMIT 1) IS NOT NULL
       ) AS written`,
      [orgId, conversationId],
    );
    return row.written;
  }

  /**
   * Appends `blocks` once, under a lock of the turn row (so `BlockRepository.appendNext` waits):
   * when the first block's id is already stored, the stored blocks are returned with `written:
   * false`; otherwise, if the turn is in `status`, they go after the turn's last block, into its
   * last message when that is an assistant message (else into a new assistant message), and the
   * usage row is recorded in the same transaction. Null when the turn is missing or not in `status`.
   */
  async appendOnce(
    orgId: string,
    turnId: string,
    blocks: KeyedBlock[],
    opts: { status: TurnStatus; usage?: (UsageRow & { callKey: string }) | null },
  ): Promise<{ blocks: Block[]; written: boolean } | null> {
    if (!isUuid(turnId) || blocks.length === 0) return null;
    return this.em.transaction(async (em) => {
      const [turn]: { status: TurnStatus }[] = await em.query(
        `SELECT status FROM turns WHERE org_id = $1 AND id = $2 FOR UPDATE`,
        [orgId, turnId],
      );
      if (!turn) return null;
      const stored: StoredBlockRow[] = await em.query(
        `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE org_id = $1 AND id = ANY($2::uuid[]) ORDER BY seq`,
        [orgId, blocks.map((b) => b.id)],
      );
      if (stored.length > 0) return { blocks: stored.map(toBlock), written: false };
      if (turn.status !== opts.status) return null;

      const [last]: { id: string; role: string; lastSeq: number }[] = await em.query(
        `SELECT id, role, (SELECT COALESCE(MAX(seq), 0) FROM blocks WHERE turn_id = $2) AS "lastSeq"
         FROM messages WHERE org_id = $1 AND turn_id = $2 ORDER BY seq DESC LIMIT 1`,
        [orgId, turnId],
      );
      const repo = new BlockRepository(em);
      const messageId =
        last?.role === 'assistant' ? last.id : (await repo.addMessage(orgId, turnId, 'assistant'))?.id;
      if (!messageId) return null;
      const lastSeq = Number(last?.lastSeq ?? 0);
      const written = await repo.appendBlocks(
        orgId,
        messageId,
        blocks.map((b, i) => ({ ...b, seq: lastSeq + i + 1 }) as Block),
      );
      if (opts.usage) await new UsageRepository(em).add(orgId, opts.usage);
      return { blocks: written, written: true };
    });
  }
}
