import type { Block, ConversationId, OrgId, TurnId, TurnStatus } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import type { NewBlock } from '../mappers/block.mapper';
import type { UsageRow } from '../records.types';
import { BlockRepository } from '../repositories/block.repository';
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
  async writtenSinceLastCompaction(orgId: OrgId, conversationId: ConversationId): Promise<boolean> {
    if (!isUuid(conversationId)) return false;
    const {
      rows: [row],
    } = await runSql<{ written: boolean }>(
      this.em,
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
   * Appends `blocks` once through `BlockRepository.append` (the turn row locked, each block checked
   * against the block rules): when their ids are already stored, the stored blocks come back with
   * `written: false`; otherwise, if the turn is in `status`, they go after the turn's last block,
   * into its last message when that is an assistant message (else into a new assistant message),
   * and the usage row is recorded in the same transaction. Null when the turn is missing or not in
   * `status`.
   */
  async appendOnce(
    orgId: OrgId,
    turnId: TurnId,
    blocks: KeyedBlock[],
    opts: { status: TurnStatus; usage?: (UsageRow & { callKey: string }) | null },
  ): Promise<{ blocks: Block[]; written: boolean } | null> {
    if (!isUuid(turnId) || blocks.length === 0) return null;
    return this.em.transaction(async (em) => {
      const result = await new BlockRepository(em).append(orgId, turnId, blocks, { status: [opts.status] });
      if (result?.written && opts.usage) await new UsageRepository(em).add(orgId, opts.usage);
      return result && { blocks: result.blocks, written: result.written };
    });
  }
}
