import { randomUUID } from 'node:crypto';
import type { OrgId, Turn, TurnId, TurnKind, TurnStatus } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import { type CallInput, type CallInputRow, callInputOf, callInputSql } from './call-input.repository';
import { TURN_COLUMNS } from './turn.repository';
import { type WindowOptions, windowBounds } from './window.repository';

export interface ClaimedTurn {
  turn: Turn;
  /** The status the turn had when it was claimed: `queued` or `running`. */
  from: TurnStatus;
  /**
   * With `callMessage`, for a turn claimed from `queued`: its first call's message, fixed in the
   * claim (see `callMessage`). Null otherwise, or when a cancel is requested or the position taken.
   */
  callMessageId?: string | null;
  /**
   * With `read`, for a turn claimed from `queued` with its call message fixed: what that first
   * call reads (`CallInputRepository.read`), as of the claim, its message included.
   */
  input?: CallInput | null;
}

/** The message a held turn's next model call writes to; see `TurnLeaseRepository.callMessage`. */
export interface CallMessage {
  /** Null when another writer took the new message's position (try again). */
  messageId: string | null;
  cancelRequested: boolean;
}

/**
 * The rule of `callMessage`, after a CTE `held (id, org_id, conversation_id, cancelled)` of the
 * held turn (locked) and with `$1` the org: the last message when it is the assistant's, else a
 * new assistant message (id `newId`) after it, none once a cancel is requested. A clash on the
 * position (a steering message added meanwhile) leaves the insert out: `messageId` is null.
 */
function callMessageCtes(newId: string): string {
  return `last AS (
         SELECT m.id, m.seq, m.role FROM messages m JOIN held ON m.turn_id = held.id
         WHERE m.org_id = $1 ORDER BY m.seq DESC LIMIT 1),
       created AS (
         INSERT INTO messages (id, org_id, conversation_id, turn_id, seq, role)
         SELECT ${newId}, held.org_id, held.conversation_id, held.id, COALESCE((SELECT seq FROM last), 0) + 1, 'assistant'
         FROM held WHERE NOT held.cancelled AND NOT EXISTS (SELECT 1 FROM last WHERE role = 'assistant')
         ON CONFLICT (turn_id, seq) DO NOTHING RETURNING id)`;
}

/** The message `callMessageCtes` decided on. */
const CALL_MESSAGE_ID = `COALESCE((SELECT id FROM created), (SELECT id FROM last WHERE role = 'assistant')) AS "messageId"`;

/**
 * The claim. The locked read keeps the status the turn had, which RETURNING alone cannot tell.
 * `$6`: the id of the first call's message, when the claim fixes it.
 */
function claimSql(read?: { ctes: string; columns: string }): string {
  return `WITH prev AS (
       SELECT id AS prev_id, status AS prev_status, org_id AS prev_org_id,
         conversation_id AS prev_conversation_id, cancel_requested_at IS NOT NULL AS prev_cancelled
       FROM turns WHERE org_id = $1 AND id = $2 AND ($5::text IS NULL OR kind = $5) FOR UPDATE),
     claimed AS (
       UPDATE turns SET status = 'running', attempt = attempt + 1, lease_owner = $3,
         lease_expires_at = now() + $4 * interval '1 millisecond', updated_at = now()
       FROM prev WHERE id = prev_id AND (prev_status = 'queued' OR (prev_status = 'running'
         AND (lease_owner = $3 OR lease_expires_at IS NULL OR lease_expires_at < now())))
       RETURNING prev_status AS "from", ${TURN_COLUMNS}),
     held AS (
       SELECT prev_id AS id, prev_org_id AS org_id, prev_conversation_id AS conversation_id,
         prev_cancelled AS cancelled
       FROM prev WHERE $6::uuid IS NOT NULL AND prev_status = 'queued' AND EXISTS (SELECT 1 FROM claimed)),
     ${callMessageCtes('$6')}${read ? `,\n     ${read.ctes}` : ''}
     SELECT claimed.*, (SELECT ${CALL_MESSAGE_ID} FROM held) AS "callMessageId"${read ? `, ${read.columns}` : ''}
     FROM claimed`;
}

const CLAIM = claimSql();

/**
 * The claim that also reads the first call's input (`callInputSql`), the window bounded by `$7`.
 * The statement's reads see the rows as they were before it: the call message it creates is not
 * among them (`withCallMessage`).
 */
const CLAIM_AND_READ = claimSql(
  callInputSql({
    org: '$1',
    conversation: '(SELECT prev_conversation_id FROM prev)',
    before: '(SELECT n FROM claimed)',
    limit: '$7',
    turn: '$2',
  }),
);

/** The input with the call's message last, as the claim created it (empty) when it did. */
function withCallMessage(input: CallInput | null, turnId: TurnId, messageId: string): CallInput | null {
  if (!input || input.turn.messages.some((m) => m.id === messageId)) return input;
  const created = { id: messageId, turnId, role: 'assistant' as const, blocks: [], attachmentIds: [] };
  return { ...input, turn: { ...input.turn, messages: [...input.turn.messages, created] } };
}

/**
 * The lease protocol of a turn: a worker claims it (one at a time, with a lease it renews), fixes
 * the message each model call writes to, and hands it back; the reconciler finds the turns
 * nobody holds. Everything else about a turn is `TurnRepository`'s.
 */
export class TurnLeaseRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /**
   * A worker takes the turn: a queued one, or a running one whose lease expired (its worker died)
   * or that it already holds. Sets `running`, counts the attempt. With `kind`, only a turn of that
   * kind. With `read` (and `callMessage`), the same statement reads the first call's input. Null
   * when there is no such turn to take (settled, paused, another worker holds it…).
   */
  async claim(
    orgId: OrgId,
    turnId: TurnId,
    owner: string,
    leaseMs: number,
    opts: { kind?: TurnKind; callMessage?: boolean; read?: Pick<WindowOptions, 'turnsReplayed'> } = {},
  ): Promise<ClaimedTurn | null> {
    if (!isUuid(turnId)) return null;
    const read = opts.callMessage && opts.read;
    const { rows } = await runSql<Turn & { from: TurnStatus; callMessageId: string | null } & CallInputRow>(
      this.em,
      read ? CLAIM_AND_READ : CLAIM,
      [
        orgId,
        turnId,
        owner,
        leaseMs,
        opts.kind ?? null,
        opts.callMessage ? randomUUID() : null,
        ...(read ? [windowBounds(read)[1]] : []),
      ],
      { prepared: true },
    );
    if (!rows.length) return null;
    // The call input's columns beside the turn's: the rest is the turn.
    const {
      from,
      callMessageId,
      summary,
      turns,
      rows: past,
      conversation,
      turnState,
      turnRows,
      ...turn
    } = rows[0];
    const claimed: ClaimedTurn = { turn, from, ...(opts.callMessage && { callMessageId }) };
    if (read) {
      const input = callInputOf({ summary, turns, rows: past, conversation, turnState, turnRows });
      claimed.input = callMessageId ? withCallMessage(input, turnId, callMessageId) : null;
    }
    return claimed;
  }

  /**
   * The message the next model call of a turn `owner` holds writes to, under the turn row's lock:
   * the last message when it is the assistant's, else a new assistant message after it (none once
   * a cancel is requested). One statement. Null when `owner` no longer holds the running turn.
   */
  async callMessage(orgId: OrgId, turnId: TurnId, owner: string): Promise<CallMessage | null> {
    if (!isUuid(turnId)) return null;
    const {
      rows: [row],
    } = await runSql<CallMessage>(
      this.em,
      `WITH held AS (
         SELECT id, org_id, conversation_id, cancel_requested_at IS NOT NULL AS cancelled FROM turns
         WHERE org_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3 FOR UPDATE),
       ${callMessageCtes('$4')}
       SELECT held.cancelled AS "cancelRequested", ${CALL_MESSAGE_ID} FROM held`,
      [orgId, turnId, owner, randomUUID()],
      { prepared: true },
    );
    return row ?? null;
  }

  /** Hands a running turn back: it stays `running` with no lease, so the next claim takes it at once. */
  async releaseLease(orgId: OrgId, turnId: TurnId, owner: string): Promise<boolean> {
    if (!isUuid(turnId)) return false;
    const { rowCount } = await runSql(
      this.em,
      `UPDATE turns SET lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
       WHERE org_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3`,
      [orgId, turnId, owner],
    );
    return rowCount > 0;
  }

  /**
   * Turns nobody works on: `queued`, `running` without a live lease, or `paused` with a cancel
   * request (its cancel job settles it), unchanged for `idleMs`.
   * Across orgs, like `UserRepository.findByApiKey`: the reconciler acts for every tenant and
   * re-reads each turn with its org id. Reads the partial index of open turns.
   */
  async listStranded(opts: { idleMs: number; limit: number }): Promise<{ orgId: OrgId; turnId: TurnId }[]> {
    const { rows } = await runSql<{ orgId: OrgId; turnId: TurnId }>(
      this.em,
      `SELECT org_id AS "orgId", id AS "turnId" FROM turns
       WHERE status IN ('queued', 'running', 'paused')
         AND (status = 'queued' OR (status = 'running' AND (lease_expires_at IS NULL OR lease_expires_at < now()))
           OR (status = 'paused' AND cancel_requested_at IS NOT NULL))
         AND updated_at < now() - $1 * interval '1 millisecond'
       ORDER BY updated_at LIMIT $2`,
      [opts.idleMs, opts.limit],
    );
    return rows;
  }

  /** Extends a held lease; false when the worker no longer holds it. */
  async renewLease(orgId: OrgId, turnId: TurnId, owner: string, leaseMs: number): Promise<boolean> {
    if (!isUuid(turnId)) return false;
    const { rowCount } = await runSql(
      this.em,
      `UPDATE turns SET lease_expires_at = now() + $4 * interval '1 millisecond'
       WHERE org_id = $1 AND id = $2 AND status = 'running' AND lease_owner = $3`,
      [orgId, turnId, owner, leaseMs],
    );
    return rowCount > 0;
  }
}
