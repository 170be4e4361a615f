import type {
  CompactionBlock,
  ConversationId,
  MemoryWindow,
  Message,
  OrgId,
  TurnId,
  TurnKind,
  TurnStatus,
} from '@portal/domain';
import { DEFAULT_LIMITS } from '@portal/prompt';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { type BlockRow, toBlock } from '../mappers/block.mapper';
import { MESSAGE_BLOCK_COLUMNS, type MessageBlockRow, messagesOf } from './block.repository';

export interface WindowOptions {
  /**
   * How many settled turns after the summary to return, newest kept (pass the configured
   * TURNS_REPLAYED; the default is the built-in one). Infinity: all of them (the turns index is
   * then read back to the conversation's first turn; the compaction reads pages instead).
   */
  turnsReplayed?: number;
  /** The current turn: only turns (and summaries) numbered before it are past. */
  beforeTurnN?: number;
}

const NO_LIMIT = 2_147_483_647;

/** The window's `before` and `limit` (`windowCtes`) for `opts`. */
export function windowBounds(opts: WindowOptions): [number, number] {
  return [
    opts.beforeTurnN ?? NO_LIMIT,
    Math.min(opts.turnsReplayed ?? DEFAULT_LIMITS.TURNS_REPLAYED, NO_LIMIT),
  ];
}

/** Where the window's reads take their values: parameters, or expressions of a larger statement. */
export interface WindowSources {
  org: string;
  conversation: string;
  /** Only turns (and summaries) numbered before this one. */
  before: string;
  /** How many turns (`windowBounds`). */
  limit: string;
}

/**
 * The window's reads as CTEs `summary`, `newest` and `past`. The turns are the newest `limit`
 * before the current one, then those from the summary's turn on: the same turns as asking for the
 * newest `limit` from the summary's turn on, read with the index backwards whatever the planner
 * guesses of the summary's turn.
 */
export function windowCtes({ org, conversation, before, limit }: WindowSources): string {
  return `summary AS (
    SELECT id, seq, kind, payload, turn_n AS "turnN" FROM blocks
    WHERE conversation_id = ${conversation} AND kind = 'compaction' AND turn_n < ${before} AND org_id = ${org}
    ORDER BY turn_n DESC, seq DESC LIMIT 1),
  newest AS (
    SELECT id, n, kind, status FROM turns
    WHERE conversation_id = ${conversation} AND kind = 'turn' AND status IN ('completed', 'failed', 'cut_off')
      AND n < ${before} AND org_id = ${org}
    ORDER BY n DESC LIMIT ${limit}),
  past AS (SELECT * FROM newest WHERE n >= COALESCE((SELECT "turnN" FROM summary), 1))`;
}

/** The window as JSON columns (`WindowRow`) after `windowCtes`; the summary's block only when `withSummary`. */
export function windowColumns(org: string, withSummary: string): string {
  return `(SELECT row_to_json(summary) FROM summary WHERE ${withSummary}) AS summary,
  (SELECT json_agg(past ORDER BY past.n) FROM past) AS turns,
  (SELECT json_agg(r ORDER BY r."turnId", r.seq, r."blockSeq") FROM (
     SELECT ${MESSAGE_BLOCK_COLUMNS}
     FROM messages m LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = ${org}
     WHERE m.turn_id IN (SELECT id FROM past) AND m.org_id = ${org}) r) AS rows`;
}

export interface WindowRow {
  summary: (BlockRow & { turnN: number }) | null;
  turns: { id: TurnId; n: number; kind: TurnKind; status: TurnStatus }[] | null;
  rows: MessageBlockRow[] | null;
}

export function windowOf(row: WindowRow): MemoryWindow {
  const summary = row.summary
    ? { turnN: row.summary.turnN, block: toBlock(row.summary) as CompactionBlock }
    : null;
  const turns = row.turns;
  if (!turns) return { summary, turns: [] };
  const byTurn = new Map(turns.map((t) => [t.id, [] as Message[]]));
  for (const message of messagesOf(row.rows ?? [])) byTurn.get(message.turnId)?.push(message);
  return { summary, turns: turns.map((turn) => ({ turn, messages: byTurn.get(turn.id) ?? [] })) };
}

/**
 * What memory reads of a conversation (SPEC 4) in one statement of three indexed reads, whatever
 * the conversation's length:
 * 1. the newest compaction block before the current turn (first entry of the partial index
 *    `blocks_compaction_idx`);
 * 2. the last `turnsReplayed` settled turns (`kind = 'turn'`, completed / failed / cut_off) from
 *    the summary's turn on and before the current turn (`turns_replayable_idx`, read backwards);
 * 3. those turns' messages by `turn_id` (the `(turn_id, seq)` key) with their blocks.
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

  async readWindow(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: WindowOptions = {},
  ): Promise<MemoryWindow> {
    return this.read(orgId, conversationId, opts, true);
  }

  /**
   * The window's turns alone: the summary still bounds them, but its block (a long summary is
   * tens of KB) is not read. For a reader that pages back through the turns with the summary in hand.
   */
  async readTurns(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: WindowOptions = {},
  ): Promise<MemoryWindow['turns']> {
    return (await this.read(orgId, conversationId, opts, false)).turns;
  }

  private async read(
    orgId: OrgId,
    conversationId: ConversationId,
    opts: WindowOptions,
    withSummary: boolean,
  ): Promise<MemoryWindow> {
    if (!isUuid(conversationId)) return { summary: null, turns: [] };
    const {
      rows: [row],
    } = await runSql<WindowRow>(
      this.em,
      `WITH ${windowCtes({ org: '$1', conversation: '$2', before: '$3', limit: '$4' })}
       SELECT ${windowColumns('$1', '$5')}`,
      [orgId, conversationId, ...windowBounds(opts), withSummary],
      { prepared: true },
    );
    return windowOf(row);
  }
}
