import { randomUUID } from 'node:crypto';
import {
  appendBlock,
  assertAppend,
  type Block,
  type ConversationId,
  type Message,
  type OrgId,
  type Role,
  type TurnId,
  type TurnStatus,
  type TurnTranscript,
} from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { DalError } from '../errors';
import {
  type BlockRow,
  type MessageRow,
  type NewBlock,
  toBlock,
  toBlockPayload,
  toMessage,
} from '../mappers/block.mapper';

/** Column lists aliased to entity property names, so raw rows feed the mappers directly. */
export const MESSAGE_COLUMNS = `id, turn_id AS "turnId", seq, role, attachment_ids AS "attachmentIds"`;
export const BLOCK_COLUMNS = `id, turn_id AS "turnId", message_id AS "messageId", seq, kind, payload`;

export type StoredBlockRow = BlockRow & { turnId: TurnId; messageId: string };

/**
 * Messages aliased `m` LEFT JOINed to their blocks `b`: one row per block (or per empty message),
 * ordered by message then block, for `messagesOf`.
 */
/**
 * The INSERT of blocks (`blockRecords`, a jsonb parameter) at their positions in a message, placed
 * by the caller's parameter numbers; a position already held is left out of what it returns.
 */
export function insertBlocksSql(p: {
  org: string;
  message: string;
  records: string;
  turn?: string;
  when?: string;
}): string {
  return `INSERT INTO blocks (id, org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
    SELECT b.id, m.org_id, m.conversation_id, m.turn_id, t.n, m.id, b.seq, b.kind, b.payload
    FROM messages m JOIN turns t ON t.id = m.turn_id,
      jsonb_to_recordset(${p.records}::jsonb) AS b (id uuid, seq integer, kind text, payload jsonb)
    WHERE m.org_id = ${p.org} AND m.id = ${p.message}${p.turn ? ` AND t.id = ${p.turn}` : ''}${p.when ? ` AND ${p.when}` : ''}
    ON CONFLICT (turn_id, seq) DO NOTHING
    RETURNING ${BLOCK_COLUMNS}`;
}

export const MESSAGE_BLOCK_COLUMNS = `m.id, m.turn_id AS "turnId", m.seq, m.role,
  m.attachment_ids AS "attachmentIds", b.id AS "blockId", b.seq AS "blockSeq", b.kind, b.payload`;

export type MessageBlockRow = MessageRow & { blockId: string | null; blockSeq: number } & Omit<
    BlockRow,
    'id' | 'seq'
  >;

/** A turn row locked with its messages (`BlockRepository.lockTurnMessages`). */
export interface LockedTurnMessages {
  turn: TurnTranscript['turn'];
  status: TurnStatus;
  leaseOwner: string | null;
  cancelRequested: boolean;
  messages: Message[];
}

/** Groups MESSAGE_BLOCK_COLUMNS rows into messages, keeping their order. */
export function messagesOf(rows: MessageBlockRow[]): Message[] {
  const messages: Message[] = [];
  for (const row of rows) {
    if (row.id === null) continue;
    if (row.id !== messages.at(-1)?.id) messages.push(toMessage(row, []));
    if (row.blockId) {
      const { blockId: id, blockSeq: seq, kind, payload } = row;
      messages.at(-1)!.blocks.push(toBlock({ id, seq, kind, payload }));
    }
  }
  return messages;
}

/** A block to append: with the id its writer chose (a streamed or keyed block), else given one. */
export type DraftBlock = NewBlock & { id?: string };

declare const checked: unique symbol;

/** Blocks `placeBlocks` placed and checked: the only blocks the repositories write. */
export interface PlacedBlocks {
  readonly messageId: string;
  readonly blocks: Block[];
  /** The turn's messages with the blocks appended. */
  readonly messages: Message[];
  readonly [checked]: true;
}

/**
 * The block rules on every append (SPEC 8), in one place: `drafts` go into `message` at the
 * positions after the turn's last block, each checked with `assertAppend` against the turn's
 * `messages` as read under its row's lock. A violation throws DomainError `invariant_violated`;
 * nothing is repaired.
 */
export function placeBlocks(
  turn: TurnTranscript['turn'],
  messages: Message[],
  message: Message,
  drafts: readonly DraftBlock[],
): PlacedBlocks {
  let seq = Math.max(0, ...messages.flatMap((m) => m.blocks.map((b) => b.seq)));
  const blocks = drafts.map((d) => ({ ...d, id: d.id ?? randomUUID(), seq: ++seq }) as Block);
  let transcript: TurnTranscript = { turn, messages };
  for (const block of blocks) {
    assertAppend(transcript, message, block);
    transcript = appendBlock(transcript, message, block);
  }
  return { messageId: message.id, blocks, messages: transcript.messages } as unknown as PlacedBlocks;
}

interface MessageTarget {
  id: string;
  turnId: TurnId;
  conversationId: ConversationId;
  turnN: number;
}

/** Groups block rows (ordered by seq) under message rows (ordered by seq). */
export function assembleMessages(messages: MessageRow[], blocks: StoredBlockRow[]): Message[] {
  const byMessage = new Map<string, Block[]>();
  for (const row of blocks) {
    const list = byMessage.get(row.messageId) ?? [];
    list.push(toBlock(row));
    byMessage.set(row.messageId, list);
  }
  return messages.map((m) => toMessage(m, byMessage.get(m.id) ?? []));
}

export class BlockRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /**
   * Adds a message to a turn (a `user` one is steering, and counted). With `seq` it is idempotent
   * (a message already at that position is returned as it is); without, it goes after the turn's
   * last message. Null when the turn is not the org's.
   */
  async addMessage(
    orgId: OrgId,
    turnId: TurnId,
    role: Role,
    opts: { seq?: number; attachmentIds?: string[] } = {},
  ): Promise<Message | null> {
    if (!isUuid(turnId)) return null;
    // A person's message added to a turn after its first is steering: counted on the turn row in
    // the same statement (`TurnRepository.recordCallIfUnchanged` relies on it).
    const { rows: inserted } = await runSql<MessageRow>(
      this.em,
      `WITH added AS (
         INSERT INTO messages (id, org_id, conversation_id, turn_id, seq, role, attachment_ids)
         SELECT $3, t.org_id, t.conversation_id, t.id,
           COALESCE($4, (SELECT COALESCE(MAX(m.seq), 0) + 1 FROM messages m WHERE m.turn_id = t.id)), $5, $6
         FROM turns t WHERE t.org_id = $1 AND t.id = $2
         ON CONFLICT (turn_id, seq) DO NOTHING
         RETURNING ${MESSAGE_COLUMNS}),
       counted AS (
         UPDATE turns SET steering_count = steering_count + 1
         WHERE org_id = $1 AND id = $2 AND $5::text = 'user' AND EXISTS (SELECT 1 FROM added))
       SELECT * FROM added`,
      [orgId, turnId, randomUUID(), opts.seq ?? null, role, opts.attachmentIds ?? []],
    );
    if (inserted.length) return toMessage(inserted[0], []);
    if (opts.seq === undefined) return null;
    const {
      rows: [existing],
    } = await runSql<MessageRow>(
      this.em,
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE org_id = $1 AND turn_id = $2 AND seq = $3`,
      [orgId, turnId, opts.seq],
    );
    if (!existing) return null;
    const { rows: blocks } = await runSql<StoredBlockRow>(
      this.em,
      `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE org_id = $1 AND message_id = $2 ORDER BY seq`,
      [orgId, existing.id],
    );
    return toMessage(existing, blocks.map(toBlock));
  }

  /**
   * The write path of blocks for writers that do not hold the turn (a steering message, a summary,
   * fixtures), in a transaction holding the turn row's lock: `drafts` go into a new user message
   * (`into: 'user'`, with `attachmentIds`), into `messageId`, or into the last message when it is
   * the assistant's, else a new assistant message, each checked by `placeBlocks`. Drafts keyed by
   * an id already stored are not written again: the stored blocks come back (`written: false`).
   * With `status`, only while the turn is in one of them. Null when the turn is not the org's or
   * not in `status`.
   */
  async append(
    orgId: OrgId,
    turnId: TurnId,
    drafts: readonly DraftBlock[],
    opts: {
      into?: 'user' | 'assistant';
      messageId?: string;
      attachmentIds?: string[];
      status?: TurnStatus[];
    } = {},
  ): Promise<{ blocks: Block[]; message: Message; written: boolean } | null> {
    return this.em.transaction(async (em) => {
      const repo = new BlockRepository(em);
      const locked = await repo.lockTurnMessages(orgId, turnId);
      if (!locked) return null;
      const keys = new Set(drafts.map((d) => d.id));
      const stored = locked.messages.flatMap((m) =>
        m.blocks.filter((b) => keys.has(b.id)).map((b) => [m, b] as const),
      );
      if (stored.length > 0)
        return { blocks: stored.map(([, b]) => b), message: stored[0][0], written: false };
      if (opts.status && !opts.status.includes(locked.status)) return null;
      const message = await repo.target(orgId, locked, opts);
      const placed = placeBlocks(locked.turn, locked.messages, message, drafts);
      const blocks = await repo.appendBlocks(orgId, placed);
      return { blocks, message: placed.messages.find((m) => m.id === message.id)!, written: true };
    });
  }

  /**
   * Writes placed blocks at their positions, idempotently by (turn, seq): a block already stored
   * at its position is kept. A position held by a different block id throws DalError
   * `block_conflict` (someone else wrote there; re-read the turn), never silently drops the block.
   * Returns the stored blocks.
   */
  async appendBlocks(orgId: OrgId, placed: PlacedBlocks): Promise<Block[]> {
    const { messageId, blocks } = placed;
    for (const b of blocks) if (!isUuid(b.id)) throw new Error(`block id must be a uuid: ${b.id}`);
    // Usually every position is free: one statement, whose RETURNING is what is stored.
    const { rows: inserted } =
      blocks.length && isUuid(messageId)
        ? await runSql<StoredBlockRow>(
            this.em,
            insertBlocksSql({ org: '$1', message: '$2', records: '$3' }),
            [orgId, messageId, blockRecords(blocks)],
            { prepared: true },
          )
        : { rows: [] };
    if (blocks.length && inserted.length === blocks.length) {
      return inserted.sort((a, b) => a.seq - b.seq).map(toBlock);
    }
    const target = await this.messageTarget(this.em, orgId, messageId);
    const { rows: stored } = await runSql<StoredBlockRow>(
      this.em,
      `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE org_id = $1 AND turn_id = $2 AND seq = ANY($3::integer[]) ORDER BY seq`,
      [orgId, target.turnId, blocks.map((b) => b.seq)],
    );
    const clash = blocks.find((b) => stored.find((s) => s.seq === b.seq)?.id !== b.id);
    if (clash) {
      throw new DalError(
        'block_conflict',
        `turn ${target.turnId} already holds another block at seq ${clash.seq}`,
      );
    }
    return stored.map(toBlock);
  }

  /** Replaces a block's fields (an answered request, a finished text). Null when not found. */
  async updateBlock(orgId: OrgId, block: Block): Promise<Block | null> {
    if (!isUuid(block.id)) return null;
    const { kind, payload } = toBlockPayload(block);
    const { rows } = await runSql<StoredBlockRow>(
      this.em,
      `UPDATE blocks SET payload = $4, updated_at = now()
       WHERE org_id = $1 AND id = $2 AND kind = $3 RETURNING ${BLOCK_COLUMNS}`,
      [orgId, block.id, kind, JSON.stringify(payload)],
    );
    return rows.length ? toBlock(rows[0]) : null;
  }

  async getBlock(
    orgId: OrgId,
    blockId: string,
  ): Promise<{ turnId: TurnId; messageId: string; block: Block } | null> {
    if (!isUuid(blockId)) return null;
    const {
      rows: [row],
    } = await runSql<StoredBlockRow>(
      this.em,
      `SELECT ${BLOCK_COLUMNS} FROM blocks WHERE org_id = $1 AND id = $2`,
      [orgId, blockId],
    );
    return row ? { turnId: row.turnId, messageId: row.messageId, block: toBlock(row) } : null;
  }

  /** A turn's messages in order, each with its blocks in order. One query. */
  async listTurnMessages(orgId: OrgId, turnId: TurnId): Promise<Message[]> {
    if (!isUuid(turnId)) return [];
    const { rows } = await runSql<MessageBlockRow>(
      this.em,
      `SELECT ${MESSAGE_BLOCK_COLUMNS}
       FROM messages m LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = $1
       WHERE m.org_id = $1 AND m.turn_id = $2 ORDER BY m.seq, b.seq`,
      [orgId, turnId],
      { prepared: true },
    );
    return messagesOf(rows);
  }

  /**
   * Locks the turn row until the surrounding transaction ends (call it inside one) and reads the
   * turn's messages, in one statement. Null when the turn is not the org's.
   */
  async lockTurnMessages(orgId: OrgId, turnId: TurnId): Promise<LockedTurnMessages | null> {
    if (!isUuid(turnId)) return null;
    const { rows } = await runSql<
      MessageBlockRow &
        Pick<LockedTurnMessages, 'leaseOwner' | 'cancelRequested'> & {
          turnStatus: TurnStatus;
          turnN: number;
          turnKind: TurnTranscript['turn']['kind'];
        }
    >(
      this.em,
      `SELECT t.status AS "turnStatus", t.n AS "turnN", t.kind AS "turnKind", t.lease_owner AS "leaseOwner",
         t.cancel_requested_at IS NOT NULL AS "cancelRequested", ${MESSAGE_BLOCK_COLUMNS}
       FROM turns t
         LEFT JOIN messages m ON m.turn_id = t.id AND m.org_id = $1
         LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = $1
       WHERE t.org_id = $1 AND t.id = $2 ORDER BY m.seq, b.seq FOR UPDATE OF t`,
      [orgId, turnId],
      { prepared: true },
    );
    if (!rows.length) return null;
    const { turnStatus: status, turnN: n, turnKind: kind, leaseOwner, cancelRequested } = rows[0];
    const turn = { id: turnId, n, kind, status };
    return { turn, status, leaseOwner, cancelRequested, messages: messagesOf(rows) };
  }

  /** The whole transcript of a conversation, for display (not for memory: see WindowRepository). */
  async listConversationMessages(orgId: OrgId, conversationId: ConversationId): Promise<Message[]> {
    if (!isUuid(conversationId)) return [];
    const [{ rows: messages }, { rows: blocks }] = await Promise.all([
      runSql<MessageRow>(
        this.em,
        `SELECT m.id, m.turn_id AS "turnId", m.seq, m.role, m.attachment_ids AS "attachmentIds"
         FROM messages m JOIN turns t ON t.id = m.turn_id
         WHERE t.org_id = $1 AND t.conversation_id = $2 AND m.org_id = $1 ORDER BY t.n, m.seq`,
        [orgId, conversationId],
      ),
      runSql<StoredBlockRow>(
        this.em,
        `SELECT b.id, b.turn_id AS "turnId", b.message_id AS "messageId", b.seq, b.kind, b.payload
         FROM blocks b JOIN turns t ON t.id = b.turn_id
         WHERE t.org_id = $1 AND t.conversation_id = $2 AND b.org_id = $1 ORDER BY t.n, b.seq`,
        [orgId, conversationId],
      ),
    ]);
    return assembleMessages(messages, blocks);
  }

  /** The message `append` writes to (see there); a new one under the turn row's lock. */
  private async target(
    orgId: OrgId,
    locked: LockedTurnMessages,
    opts: { into?: Role; messageId?: string; attachmentIds?: string[] },
  ): Promise<Message> {
    const { id: turnId } = locked.turn;
    if (opts.messageId) {
      const found = locked.messages.find((m) => m.id === opts.messageId);
      if (!found)
        throw new DalError('not_found', `message ${opts.messageId} is not a message of turn ${turnId}`);
      return found;
    }
    const last = locked.messages.at(-1);
    if (opts.into !== 'user' && last?.role === 'assistant') return last;
    const created = await this.addMessage(orgId, turnId, opts.into ?? 'assistant', {
      attachmentIds: opts.attachmentIds,
    });
    if (!created) throw new DalError('block_conflict', `a message position of turn ${turnId} was taken`);
    return created;
  }

  private async messageTarget(em: EntityManager, orgId: OrgId, messageId: string) {
    const { rows } = isUuid(messageId)
      ? await runSql<MessageTarget>(
          em,
          `SELECT m.id, m.turn_id AS "turnId", m.conversation_id AS "conversationId", t.n AS "turnN"
           FROM messages m JOIN turns t ON t.id = m.turn_id
           WHERE m.org_id = $1 AND m.id = $2`,
          [orgId, messageId],
        )
      : { rows: [] };
    if (!rows.length) throw new DalError('not_found', `message ${messageId} not found`);
    return rows[0];
  }
}

/** Blocks as the JSON rows the inserts read with `jsonb_to_recordset`. */
export function blockRecords(blocks: Block[]): string {
  return JSON.stringify(blocks.map((b) => ({ id: b.id, seq: b.seq, ...toBlockPayload(b) })));
}
