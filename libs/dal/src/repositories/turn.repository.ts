import { randomUUID } from 'node:crypto';
import {
  type Block,
  type ConversationId,
  type Effort,
  type Message,
  type OrgId,
  type TextBlock,
  type Turn,
  TurnId,
  type TurnKind,
  type TurnStatus,
  type UserId,
} from '@portal/domain';
import { personRequest } from '@portal/prompt';
import type { EntityManager } from 'typeorm';
import { type Db, isPgError, isUuid, managerOf, runSql } from '../db.util';
import { DalError } from '../errors';
import { type BlockRow, toBlock } from '../mappers/block.mapper';
import type { McpToolSnapshot, UsageRow } from '../records.types';
import { BlockRepository, blockRecords, insertBlocksSql, type PlacedBlocks } from './block.repository';
import { catalogueSkills } from './skill.repository';
import { insertUsageSql } from './usage.repository';

export interface NewTurn {
  conversationId: ConversationId;
  kind?: TurnKind;
  effort: Effort;
  model: string;
  /** The person's text as typed (leading slugs included). */
  text: string;
  attachmentIds?: string[];
  /** Recorded as the turn's SKILL_SELECT trace entry, written only when there are some. */
  selectedSkillIds?: string[];
  catalogueSkillIds?: string[];
  /** Opens only while turn `afterTurnN` is still the conversation's latest (a retry of it). */
  afterTurnN?: number;
}

/** A person's message opening a turn (`TurnRepository.createForPerson`): the rest is its agent's. */
export interface PersonTurn extends Pick<
  NewTurn,
  'conversationId' | 'text' | 'attachmentIds' | 'selectedSkillIds' | 'afterTurnN'
> {
  /** The message's own effort; without, the agent's. */
  effort?: Effort;
}

const ACTIVE: TurnStatus[] = ['queued', 'running', 'paused'];

/**
 * A turn row's columns as `Turn` names them (raw queries on the hot paths skip the entity layer).
 * The selected skills are read from the turn's SKILL_SELECT trace entry, their one record (SPEC 6).
 */
export const TURN_COLUMNS = `id, conversation_id AS "conversationId", n, kind, status, effort, model,
  context_tokens AS "contextTokens",
  COALESCE((SELECT te.skill_ids FROM trace_entries te WHERE te.org_id = turns.org_id
    AND te.turn_id = turns.id AND te.kind = 'SKILL_SELECT'), '{}') AS "selectedSkillIds",
  catalogue_skill_ids AS "catalogueSkillIds", error`;

/**
 * Opening a turn, in one statement: the `bumped` CTE (its source) bumps the conversation's turn
 * number, the row lock that also serialises concurrent openers, and yields `n, model, effort,
 * catalogue`; then the queued turn, the person's message with its one text block, the SKILL_SELECT
 * trace entry (when skills were selected) and the person request. Parameters: org, conversation,
 * turn, kind, selected skill ids, message, attachment ids, block, its payload, the request's text
 * and tokens (`$1`–`$11`); the source's own follow. `ctes` come before `bumped`; `result` reads
 * `turn` (a row when it opened).
 */
function openTurnSql(bumped: string, ctes = '', result = 'SELECT * FROM turn'): string {
  return `WITH ${ctes}bumped AS (${bumped}),
     turn AS (
       INSERT INTO turns (id, org_id, conversation_id, n, kind, status, effort, model, catalogue_skill_ids)
       SELECT $3, $1, $2, n, $4, 'queued', effort, model, catalogue FROM bumped
       RETURNING n, effort, model, catalogue_skill_ids AS "catalogueSkillIds"),
     message AS (
       INSERT INTO messages (id, org_id, conversation_id, turn_id, seq, role, attachment_ids)
       SELECT $6, $1, $2, $3, 1, 'user', $7 FROM turn),
     block AS (
       INSERT INTO blocks (id, org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
       SELECT $8, $1, $2, $3, n, $6, 1, 'text', $9 FROM turn),
     trace AS (
       INSERT INTO trace_entries (org_id, turn_id, kind, skill_ids)
       SELECT $1, $3, 'SKILL_SELECT', $5::uuid[] FROM turn WHERE cardinality($5::uuid[]) > 0),
     request AS (
       INSERT INTO person_requests (message_id, org_id, conversation_id, turn_n, seq, text, tokens)
       SELECT $6, $1, $2, n, 1, $10, $11 FROM turn WHERE $11::int IS NOT NULL)
     ${result}`;
}

/** With the model, effort and catalogue given (`$12`–`$14`), after turn `$15` when not null. */
const OPEN_TURN = openTurnSql(`
       UPDATE conversations SET last_turn_n = last_turn_n + 1, updated_at = now()
       WHERE org_id = $1 AND id = $2 AND ($15::int IS NULL OR last_turn_n = $15)
       RETURNING last_turn_n AS n, $12::text AS model, $13::text AS effort, $14::uuid[] AS catalogue`);

/**
 * In user `$12`'s conversation, on its agent's terms (`createForPerson`), effort `$13`, after turn
 * `$14`. A row whenever the conversation is the user's: `busy` when it has an open turn, which the
 * statement then leaves as it is (a message that steers it comes here first: no failed insert).
 */
const OPEN_PERSON_TURN = openTurnSql(
  `
       UPDATE conversations c SET last_turn_n = c.last_turn_n + 1, updated_at = now()
       FROM agents a, owned
       WHERE c.org_id = $1 AND c.id = $2 AND NOT owned.busy AND ($14::int IS NULL OR c.last_turn_n = $14)
         AND a.org_id = c.org_id AND a.id = c.agent_id
       RETURNING c.last_turn_n AS n, a.model, COALESCE($13::text, a.effort) AS effort,
         ARRAY(SELECT s.id FROM ${catalogueSkills('c.org_id', 'a.id', '$12')}
           AND s.id <> ALL($5::uuid[]) ORDER BY b.position) AS catalogue`,
  `owned AS (
       SELECT EXISTS (SELECT 1 FROM turns t WHERE t.org_id = $1 AND t.conversation_id = $2
         AND t.status IN ('queued', 'running', 'paused')) AS busy
       FROM conversations WHERE org_id = $1 AND id = $2 AND user_id = $12),
     `,
  'SELECT owned.busy, turn.* FROM owned LEFT JOIN turn ON true',
);

export interface LockedTurn {
  turn: Turn;
  leaseOwner: string | null;
  /** A worker holds the turn and its lease has not lapsed. */
  leaseLive: boolean;
  cancelRequested: boolean;
}

/** What one model call (or one step) of a held turn records; see `TurnRepository.recordCall`. */
export interface CallRecord {
  /** The blocks, placed and checked by `placeBlocks` under the turn row's lock. */
  placed?: PlacedBlocks;
  /** The call's usage row, once per `callKey`; its input tokens become the turn's `contextTokens`. */
  usage?: UsageRow & { callKey: string };
  /** Settles (or pauses) the turn, from one of `from`, with `error`; without, the status stays. */
  status?: { to: TurnStatus; from: TurnStatus[]; error: string | null };
}

export class TurnRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /**
   * Opens a `queued` turn numbered after the conversation's last one, with the person's message
   * (one text block; in a regular turn, with its request: `PersonRequestRepository`) and, when it
   * selected skills, its SKILL_SELECT trace entry, in one statement. Null when the conversation is
   * not the org's, or (with `afterTurnN`) has a later turn; throws DalError `turn_active` when the
   * conversation already has a queued, running or paused turn.
   */
  async createWithUserMessage(
    orgId: OrgId,
    input: NewTurn,
  ): Promise<{ turn: Turn; message: Message } | null> {
    const { model, effort, catalogueSkillIds = [], afterTurnN = null } = input;
    return this.open(orgId, input, OPEN_TURN, [model, effort, catalogueSkillIds, afterTurnN]);
  }

  /**
   * A person's message opens a regular turn of their own conversation on its agent's terms, read
   * in the same statement (no read before it): the agent's model, the message's effort or else the
   * agent's, and the agent's catalogue as the person sees it (SPEC 6) less the selected skills.
   * Null when the conversation is not the person's, or (with `afterTurnN`) has a later turn; throws
   * DalError `turn_active` as `createWithUserMessage` does.
   */
  async createForPerson(
    orgId: OrgId,
    userId: UserId,
    input: PersonTurn,
  ): Promise<{ turn: Turn; message: Message } | null> {
    return this.open(orgId, { ...input, kind: 'turn' }, OPEN_PERSON_TURN, [
      userId,
      input.effort ?? null,
      input.afterTurnN ?? null,
    ]);
  }

  /** Runs an `openTurnSql` statement: the parameters from `$1` to `$11`, then `own`. */
  private async open(
    orgId: OrgId,
    input: PersonTurn & { kind?: TurnKind },
    sql: string,
    own: unknown[],
  ): Promise<{ turn: Turn; message: Message } | null> {
    if (!isUuid(input.conversationId)) return null;
    const kind = input.kind ?? 'turn';
    const block: TextBlock = {
      id: randomUUID(),
      seq: 1,
      kind: 'text',
      text: input.text,
      narration: false,
      steering: false,
    };
    const turnId = TurnId(randomUUID());
    const selectedSkillIds = input.selectedSkillIds ?? [];
    const message: Message = {
      id: randomUUID(),
      turnId,
      role: 'user',
      blocks: [block],
      attachmentIds: input.attachmentIds ?? [],
    };
    const request = kind === 'turn' ? personRequest(input.text, false) : null;
    try {
      const { rows } = await runSql<
        Pick<Turn, 'n' | 'effort' | 'model' | 'catalogueSkillIds'> & { busy?: boolean }
      >(
        this.em,
        sql,
        [
          orgId,
          input.conversationId,
          turnId,
          kind,
          selectedSkillIds,
          message.id,
          message.attachmentIds,
          block.id,
          JSON.stringify({ text: block.text, narration: false, steering: false }),
          request?.text ?? null,
          request?.tokens ?? null,
          ...own,
        ],
        { prepared: true },
      );
      const [row] = rows;
      if (row?.busy) throw turnActive(input.conversationId);
      if (!row?.n) return null;
      const { busy: _busy, ...opened } = row;
      const turn: Turn = {
        id: turnId,
        conversationId: input.conversationId,
        kind,
        status: 'queued',
        contextTokens: null,
        selectedSkillIds,
        error: null,
        ...opened,
      };
      return { turn, message };
    } catch (err) {
      if (isPgError(err, '23505', 'turns_one_active_idx')) throw turnActive(input.conversationId);
      throw err;
    }
  }

  async get(orgId: OrgId, turnId: TurnId): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const {
      rows: [row],
    } = await runSql<Turn>(
      this.em,
      `SELECT ${TURN_COLUMNS} FROM turns WHERE org_id = $1 AND id = $2`,
      [orgId, turnId],
      { prepared: true },
    );
    return row ?? null;
  }

  async listForConversation(orgId: OrgId, conversationId: ConversationId): Promise<Turn[]> {
    if (!isUuid(conversationId)) return [];
    const { rows } = await runSql<Turn>(
      this.em,
      `SELECT ${TURN_COLUMNS} FROM turns WHERE org_id = $1 AND conversation_id = $2 ORDER BY n`,
      [orgId, conversationId],
    );
    return rows;
  }

  async getLatest(orgId: OrgId, conversationId: ConversationId): Promise<Turn | null> {
    if (!isUuid(conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<Turn>(
      this.em,
      `SELECT ${TURN_COLUMNS} FROM turns WHERE org_id = $1 AND conversation_id = $2 ORDER BY n DESC LIMIT 1`,
      [orgId, conversationId],
    );
    return row ?? null;
  }

  /** The conversation's queued, running or paused turn, if any (there is at most one). */
  async getActive(orgId: OrgId, conversationId: ConversationId): Promise<Turn | null> {
    if (!isUuid(conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<Turn>(
      this.em,
      `SELECT ${TURN_COLUMNS} FROM turns WHERE org_id = $1 AND conversation_id = $2 AND status = ANY($3)`,
      [orgId, conversationId, ACTIVE],
    );
    return row ?? null;
  }

  /**
   * Sets the status (and the error, and the context size, when given). With `from`, only a turn
   * currently in one of those statuses changes; null means nothing changed. Leaving `running`
   * drops the lease.
   */
  async updateStatus(
    orgId: OrgId,
    turnId: TurnId,
    status: TurnStatus,
    opts: { error?: string | null; from?: TurnStatus[]; contextTokens?: number } = {},
  ): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const { rows } = await runSql<Turn>(
      this.em,
      `UPDATE turns SET status = $3, updated_at = now(),
         error = CASE WHEN $4 THEN $5 ELSE error END,
         context_tokens = COALESCE($6, context_tokens),
         lease_owner = CASE WHEN $3 = 'running' THEN lease_owner END,
         lease_expires_at = CASE WHEN $3 = 'running' THEN lease_expires_at END
       WHERE org_id = $1 AND id = $2 AND ($7::text[] IS NULL OR status = ANY($7))
       RETURNING ${TURN_COLUMNS}`,
      [
        orgId,
        turnId,
        status,
        opts.error !== undefined,
        opts.error ?? null,
        opts.contextTokens ?? null,
        opts.from ?? null,
      ],
      { prepared: true },
    );
    return rows[0] ?? null;
  }

  /**
   * Marks a queued, running or paused turn for cancelling (the first request's time is kept).
   * Null when the turn is not the org's or has already settled.
   */
  async requestCancel(orgId: OrgId, turnId: TurnId): Promise<Turn | null> {
    if (!isUuid(turnId)) return null;
    const { rows } = await runSql<Turn>(
      this.em,
      `UPDATE turns SET cancel_requested_at = COALESCE(cancel_requested_at, now()), updated_at = now()
       WHERE org_id = $1 AND id = $2 AND status = ANY($3) RETURNING ${TURN_COLUMNS}`,
      [orgId, turnId, ACTIVE],
    );
    return rows[0] ?? null;
  }

  /**
   * What a held turn's step records, in one statement (call it under the turn row's lock): the
   * blocks at their positions and the usage row (the inserts `appendBlocks` and `UsageRepository.add`
   * make), `contextTokens`, and the status (as `updateStatus`). Returns the
   * stored blocks; a position held by another block throws DalError `block_conflict`.
   */
  async recordCall(orgId: OrgId, turnId: TurnId, record: CallRecord): Promise<Block[]> {
    if (!isUuid(turnId)) return [];
    const stored = (await this.record(orgId, turnId, record, null))!;
    const { placed } = record;
    if (!placed || stored.length === placed.blocks.length) return stored;
    // A position was taken: what is stored there decides (the same blocks, or a conflict).
    return new BlockRepository(this.em).appendBlocks(orgId, placed);
  }

  /**
   * `recordCall` without the turn row's lock held first: it takes the lock and writes only while
   * `seen` still holds (the turn running, held by `owner`, no cancel asked for, and the steering
   * count read with the transcript the blocks were placed on). Null, writing nothing, otherwise.
   */
  async recordCallIfUnchanged(
    orgId: OrgId,
    turnId: TurnId,
    seen: { owner: string; steeringCount: number },
    record: CallRecord,
  ): Promise<Block[] | null> {
    if (!isUuid(turnId)) return null;
    const stored = await this.record(orgId, turnId, record, seen);
    // Positions come from the transcript the count vouches for: none can have been taken.
    if (stored && record.placed && stored.length !== record.placed.blocks.length) {
      throw new DalError('block_conflict', `a block position of turn ${turnId} was taken`);
    }
    return stored;
  }

  /** recordCall's statement; with `seen`, every write waits on the guard (null when it fails). */
  private async record(
    orgId: OrgId,
    turnId: TurnId,
    { placed, usage, status }: CallRecord,
    seen: { owner: string; steeringCount: number } | null,
  ): Promise<Block[] | null> {
    const messageId = placed?.messageId ?? null;
    const blocks = placed?.blocks ?? [];
    for (const b of blocks) if (!isUuid(b.id)) throw new Error(`block id must be a uuid: ${b.id}`);
    // Only the settle without the lock first takes the guard: the locked path pays nothing for it.
    const guard = seen
      ? `guard AS (
         SELECT 1 FROM turns WHERE org_id = $1 AND id = $2 AND lease_owner = $16 AND status = 'running'
           AND cancel_requested_at IS NULL AND steering_count = $17 FOR UPDATE),`
      : '';
    const when = seen ? 'EXISTS (SELECT 1 FROM guard)' : undefined;
    const {
      rows: [row],
    } = await runSql<{ held: boolean; blocks: (BlockRow & { seq: number })[] | null }>(
      this.em,
      `WITH ${guard}
       block AS (${insertBlocksSql({ org: '$1', turn: '$2', message: '$3', records: '$4', when })}),
       usage AS (${insertUsageSql({ org: '$1', turn: '$2', first: 6, when: when ? `$5::boolean AND ${when}` : '$5::boolean' })}),
       turn AS (
         UPDATE turns SET status = COALESCE($13::text, status), updated_at = now(),
           error = CASE WHEN $13::text IS NULL THEN error ELSE $14::text END,
           context_tokens = COALESCE($8::integer, context_tokens),
           lease_owner = CASE WHEN COALESCE($13::text, status) = 'running' THEN lease_owner END,
           lease_expires_at = CASE WHEN COALESCE($13::text, status) = 'running' THEN lease_expires_at END
         WHERE org_id = $1 AND id = $2 AND ($13::text IS NULL OR status = ANY($15::text[]))${when ? ` AND ${when}` : ''})
       SELECT ${when ?? 'true'} AS held, (SELECT json_agg(block ORDER BY block.seq) FROM block) AS blocks`,
      [
        orgId,
        turnId,
        messageId !== null && isUuid(messageId) ? messageId : null,
        blockRecords(blocks),
        usage !== undefined,
        usage?.kind ?? null,
        usage?.model ?? null,
        usage?.inputTokens ?? null,
        usage?.outputTokens ?? null,
        usage?.cachedTokens ?? null,
        usage?.cost ?? null,
        usage?.callKey ?? null,
        status?.to ?? null,
        status?.error ?? null,
        status?.from ?? [],
        ...(seen ? [seen.owner, seen.steeringCount] : []),
      ],
      { prepared: true },
    );
    return row?.held ? (row.blocks ?? []).map(toBlock) : null;
  }

  /**
   * Keeps the MCP tools listed when the turn started. The first list stored stays (a worker that
   * took the turn over meanwhile may have stored one): the stored one is returned.
   */
  async saveMcpTools(orgId: OrgId, turnId: TurnId, snapshot: McpToolSnapshot): Promise<McpToolSnapshot> {
    const {
      rows: [row],
    } = await runSql<{ mcpTools: McpToolSnapshot }>(
      this.em,
      `WITH saved AS (
         UPDATE turns SET mcp_tools = $3 WHERE org_id = $1 AND id = $2 AND mcp_tools IS NULL
         RETURNING mcp_tools)
       SELECT COALESCE((SELECT mcp_tools FROM saved),
         (SELECT mcp_tools FROM turns WHERE org_id = $1 AND id = $2)) AS "mcpTools"`,
      [orgId, turnId, JSON.stringify(snapshot)],
      { prepared: true },
    );
    return row?.mcpTools ?? snapshot;
  }

  /** Each call on the turn's own model overwrites this with its input tokens. */
  async setContextTokens(orgId: OrgId, turnId: TurnId, contextTokens: number): Promise<void> {
    if (!isUuid(turnId)) return;
    await runSql(
      this.em,
      `UPDATE turns SET context_tokens = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
      [orgId, turnId, contextTokens],
      { prepared: true },
    );
  }

  /**
   * Locks the turn row until the surrounding transaction ends (call it inside one), so writers
   * that also lock it (BlockRepository.appendNext) wait. With the lease and the cancel flag.
   */
  async lockForUpdate(orgId: OrgId, turnId: TurnId): Promise<LockedTurn | null> {
    if (!isUuid(turnId)) return null;
    const {
      rows: [row],
    } = await runSql<Turn & Omit<LockedTurn, 'turn'>>(
      this.em,
      `SELECT ${TURN_COLUMNS}, lease_owner AS "leaseOwner", cancel_requested_at IS NOT NULL AS "cancelRequested",
         COALESCE(lease_owner IS NOT NULL AND lease_expires_at > now(), false) AS "leaseLive"
       FROM turns WHERE org_id = $1 AND id = $2 FOR UPDATE`,
      [orgId, turnId],
      { prepared: true },
    );
    if (!row) return null;
    const { leaseOwner, leaseLive, cancelRequested, ...turn } = row;
    return { turn, leaseOwner, leaseLive, cancelRequested };
  }
}

function turnActive(conversationId: ConversationId): DalError {
  return new DalError('turn_active', `conversation ${conversationId} already has an open turn`);
}
