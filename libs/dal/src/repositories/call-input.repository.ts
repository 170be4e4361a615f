import type { MemoryWindow, Message, OrgId, Turn } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import type { Agent, Conversation, McpToolSnapshot } from '../records.types';
import { AGENT_JSON } from './agent.repository';
import { MESSAGE_BLOCK_COLUMNS, type MessageBlockRow, messagesOf } from './block.repository';
import { CONVERSATION_COLUMNS } from './conversation.repository';
import {
  WINDOW_COLUMNS,
  WINDOW_CTES,
  type WindowOptions,
  type WindowRow,
  windowBounds,
  windowOf,
} from './window.repository';

/** What a model call reads of its own turn. */
export interface TurnForCall {
  /** The turn's messages in order, each with its blocks in order. */
  messages: Message[];
  /** The MCP tools the turn offers: null until `TurnRepository.saveMcpTools` stores them. */
  mcpTools: McpToolSnapshot | null;
  /** Compared when the call's answer settles (`TurnRepository.recordCallIfUnchanged`). */
  steeringCount: number;
}

/** Everything a model call reads from Postgres (`CallInputRepository.read`). */
export interface CallInput {
  conversation: Conversation;
  agent: Agent;
  /** The conversation's memory before the turn (`WindowRepository.readWindow`). */
  window: MemoryWindow;
  turn: TurnForCall;
}

type CallInputRow = WindowRow & {
  conversation:
    | (Omit<Conversation, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string; agent: Agent })
    | null;
  mcpTools: McpToolSnapshot | null;
  steeringCount: number;
  turnRows: MessageBlockRow[] | null;
};

/**
 * What the next model call of a turn reads, in one statement (issue #29: a round trip and a
 * snapshot for each read was most of their cost): the conversation with its agent, the memory
 * window before the turn, and the turn's own messages, MCP tools and steering count.
 */
export class CallInputRepository {
  private readonly em: EntityManager;

  constructor(db: Db) {
    this.em = managerOf(db);
  }

  /** Null when the turn, or its conversation, is not the org's. */
  async read(
    orgId: OrgId,
    turn: Pick<Turn, 'id' | 'conversationId' | 'n'>,
    opts: Pick<WindowOptions, 'turnsReplayed'> = {},
  ): Promise<CallInput | null> {
    if (!isUuid(turn.id) || !isUuid(turn.conversationId)) return null;
    const {
      rows: [row],
    } = await runSql<CallInputRow>(
      this.em,
      `WITH ${WINDOW_CTES}
       SELECT ${WINDOW_COLUMNS},
         (SELECT row_to_json(x) FROM (
            SELECT ${CONVERSATION_COLUMNS}, ${AGENT_JSON} AS agent
            FROM conversations c JOIN agents a ON a.org_id = c.org_id AND a.id = c.agent_id
            WHERE c.org_id = $1 AND c.id = $2) x) AS conversation,
         t.mcp_tools AS "mcpTools", t.steering_count AS "steeringCount",
         (SELECT json_agg(r ORDER BY r.seq, r."blockSeq") FROM (
            SELECT ${MESSAGE_BLOCK_COLUMNS}
            FROM messages m LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = $1
            WHERE m.org_id = $1 AND m.turn_id = $6) r) AS "turnRows"
       FROM turns t WHERE t.org_id = $1 AND t.id = $6 AND t.conversation_id = $2`,
      [orgId, turn.conversationId, ...windowBounds({ ...opts, beforeTurnN: turn.n }), true, turn.id],
      { prepared: true },
    );
    if (!row?.conversation) return null;
    const { agent, createdAt, updatedAt, ...conversation } = row.conversation;
    return {
      conversation: { ...conversation, createdAt: new Date(createdAt), updatedAt: new Date(updatedAt) },
      agent,
      window: windowOf(row),
      turn: {
        messages: messagesOf(row.turnRows ?? []),
        mcpTools: row.mcpTools,
        steeringCount: row.steeringCount,
      },
    };
  }
}
