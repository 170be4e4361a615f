import type { MemoryWindow, Message, OrgId, Turn } from '@portal/domain';
import type { EntityManager } from 'typeorm';
import { type Db, isUuid, managerOf, runSql } from '../db.util';
import type { Agent, Conversation, McpToolSnapshot } from '../records.types';
import { AGENT_JSON } from './agent.repository';
import { MESSAGE_BLOCK_COLUMNS, type MessageBlockRow, messagesOf } from './block.repository';
import { CONVERSATION_COLUMNS } from './conversation.repository';
import {
  type WindowOptions,
  type WindowRow,
  windowBounds,
  windowColumns,
  windowCtes,
  type WindowSources,
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

export type CallInputRow = WindowRow & {
  conversation:
    | (Omit<Conversation, 'createdAt' | 'updatedAt'> & { createdAt: string; updatedAt: string; agent: Agent })
    | null;
  turnState: { mcpTools: McpToolSnapshot | null; steeringCount: number } | null;
  turnRows: MessageBlockRow[] | null;
};

/**
 * A call's input as columns (`CallInputRow`) of a statement whose CTEs include
 * `windowCtes(sources)`; `turn` is the turn's id. For `read`, and for the claim that reads the
 * first call's input with it (`TurnLeaseRepository.claim`).
 */
export function callInputSql(sources: WindowSources & { turn: string }): { ctes: string; columns: string } {
  const { org, conversation, turn } = sources;
  return {
    ctes: windowCtes(sources),
    columns: `${windowColumns(org, 'true')},
      (SELECT row_to_json(x) FROM (
         SELECT ${CONVERSATION_COLUMNS}, ${AGENT_JSON} AS agent
         FROM conversations c JOIN agents a ON a.org_id = c.org_id AND a.id = c.agent_id
         WHERE c.org_id = ${org} AND c.id = ${conversation}) x) AS conversation,
      (SELECT json_build_object('mcpTools', t.mcp_tools, 'steeringCount', t.steering_count)
         FROM turns t WHERE t.org_id = ${org} AND t.id = ${turn} AND t.conversation_id = ${conversation})
        AS "turnState",
      (SELECT json_agg(r ORDER BY r.seq, r."blockSeq") FROM (
         SELECT ${MESSAGE_BLOCK_COLUMNS}
         FROM messages m LEFT JOIN blocks b ON b.message_id = m.id AND b.org_id = ${org}
         WHERE m.org_id = ${org} AND m.turn_id = ${turn}) r) AS "turnRows"`,
  };
}

/** The `callInputSql` columns of a row; null without the conversation, or the turn in it. */
export function callInputOf(row: CallInputRow): CallInput | null {
  if (!row.conversation || !row.turnState) return null;
  const { agent, createdAt, updatedAt, ...conversation } = row.conversation;
  return {
    conversation: { ...conversation, createdAt: new Date(createdAt), updatedAt: new Date(updatedAt) },
    agent,
    window: windowOf(row),
    turn: { messages: messagesOf(row.turnRows ?? []), ...row.turnState },
  };
}

const READ = callInputSql({ org: '$1', conversation: '$2', before: '$3', limit: '$4', turn: '$5' });

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
      `WITH ${READ.ctes} SELECT ${READ.columns}`,
      [orgId, turn.conversationId, ...windowBounds({ ...opts, beforeTurnN: turn.n }), turn.id],
      { prepared: true },
    );
    return callInputOf(row);
  }
}
