import {
  AgentId,
  type Block,
  type ConversationId,
  type OrgId,
  type Turn,
  type TurnKind,
  type TurnStatus,
  UserId,
} from '@portal/domain';
import type { DataSource, Logger } from 'typeorm';
import { AgentRepository } from '../repositories/agent.repository';
import { BlockRepository, placeBlocks } from '../repositories/block.repository';
import { ConversationRepository } from '../repositories/conversation.repository';
import { OrgRepository } from '../repositories/org.repository';
import { PersonRequestRepository } from '../repositories/person-request.repository';
import { TurnRepository } from '../repositories/turn.repository';
import { UserRepository } from '../repositories/user.repository';

/** An org with an author, a member and an agent `researcher`. */
export async function seedOrg(ds: DataSource, orgId: OrgId): Promise<void> {
  await new OrgRepository(ds).upsert(orgId);
  const users = new UserRepository(ds);
  await users.upsert(orgId, UserId('alice'), 'author');
  await users.upsert(orgId, UserId('bob'), 'member');
  await new AgentRepository(ds).upsert(orgId, {
    id: AgentId('researcher'),
    name: 'Researcher',
    instructions: 'Research.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [],
    reviewer: null,
    compactionGuidance: null,
  });
}

export async function newConversation(
  ds: DataSource,
  orgId: OrgId,
  userId = UserId('alice'),
): Promise<ConversationId> {
  const conversation = await new ConversationRepository(ds).create(orgId, userId, AgentId('researcher'));
  if (!conversation) throw new Error('no conversation');
  return conversation.id;
}

type BlockDraft = Block extends infer B ? (B extends unknown ? Omit<B, 'id' | 'seq'> : never) : never;

/** A turn with its user text and, when given, an assistant message holding `blocks`, then settled. */
export async function settledTurn(
  ds: DataSource,
  orgId: OrgId,
  conversationId: ConversationId,
  opts: { text?: string; kind?: TurnKind; status?: TurnStatus; blocks?: BlockDraft[] } = {},
): Promise<Turn> {
  const turns = new TurnRepository(ds);
  const created = await turns.createWithUserMessage(orgId, {
    conversationId,
    kind: opts.kind,
    effort: 'low',
    model: 'gpt-test',
    text: opts.text ?? 'hello',
  });
  if (!created) throw new Error('no turn');
  if (opts.blocks?.length) {
    // The turn is this fixture's alone: placed and checked on its known messages, without a lock.
    const blocks = new BlockRepository(ds);
    const message = await blocks.addMessage(orgId, created.turn.id, 'assistant', { seq: 2 });
    await blocks.appendBlocks(orgId, placeBlocks(created.turn, [created.message], message!, opts.blocks));
  }
  const status = opts.status ?? 'completed';
  const settled = await turns.updateStatus(orgId, created.turn.id, status);
  return settled!;
}

export function answer(text: string): BlockDraft {
  return { kind: 'text', text, narration: false, steering: false };
}

/** Records every SQL statement the data source sends. */
export class QueryLog implements Logger {
  queries: { sql: string; params: unknown[] }[] = [];

  logQuery(sql: string, params?: unknown[]): void {
    this.queries.push({ sql, params: params ?? [] });
  }
  logQueryError(): void {}
  logQuerySlow(): void {}
  logSchemaBuild(): void {}
  logMigration(): void {}
  log(): void {}
}

/**
 * Writes turns from..to of a conversation straight in SQL, each a user and an assistant text
 * message: long conversations in one statement, then the person's requests from them (as the
 * gateway stores them with each message). `person` and `answer` are SQL expressions of the turn
 * number `t.n` (by default both say `turn <n>`).
 */
export async function bulkTurns(
  ds: DataSource,
  orgId: OrgId,
  conversationId: ConversationId,
  turns: { from?: number; to: number; model?: string; person?: string; answer?: string },
): Promise<void> {
  const person = turns.person ?? `'turn ' || t.n`;
  const answer = turns.answer ?? `'turn ' || t.n`;
  await ds.query(
    `WITH t AS (
       INSERT INTO turns (org_id, conversation_id, n, kind, status, effort, model)
       SELECT $1, $2, g, 'turn', 'completed', 'low', $5 FROM generate_series($3::int, $4::int) g
       RETURNING id, n
     ), m AS (
       INSERT INTO messages (org_id, conversation_id, turn_id, seq, role)
       SELECT $1, $2, t.id, s, CASE s WHEN 1 THEN 'user' ELSE 'assistant' END FROM t, generate_series(1, 2) s
       RETURNING id, turn_id, seq
     )
     INSERT INTO blocks (org_id, conversation_id, turn_id, turn_n, message_id, seq, kind, payload)
     SELECT $1, $2, t.id, t.n, m.id, m.seq, 'text', jsonb_build_object(
       'text', CASE m.seq WHEN 1 THEN ${person} ELSE ${answer} END, 'narration', false, 'steering', false)
     FROM m JOIN t ON t.id = m.turn_id`,
    [orgId, conversationId, turns.from ?? 1, turns.to, turns.model ?? 'm'],
  );
  await ds.query(`UPDATE conversations SET last_turn_n = $2 WHERE id = $1`, [conversationId, turns.to]);
  await new PersonRequestRepository(ds).recordStored({ conversationId });
}

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`, the fields read here and by the prompt bench. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

/** The scan nodes of a statement's executed plan, with the rows each returned over all its loops. */
export async function planScans(
  ds: Pick<DataSource, 'query'>,
  sql: string,
  params: unknown[],
): Promise<{ type: string; relation: string; index?: string; rows: number }[]> {
  const [row] = await ds.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
  const out: { type: string; relation: string; index?: string; rows: number }[] = [];
  const walk = (node: PlanNode) => {
    if (node['Relation Name'] || node['Index Name']) {
      out.push({
        type: node['Node Type'],
        relation: node['Relation Name'] ?? '',
        index: node['Index Name'],
        rows: node['Actual Rows'] * node['Actual Loops'],
      });
    }
    node.Plans?.forEach(walk);
  };
  walk(row['QUERY PLAN'][0].Plan);
  return out;
}

/**
 * The scans of the SELECTs among `queries` (what one call sent, logged by QueryLog) as they ran:
 * the statements replayed in one transaction, as the call's own, each SELECT explained.
 */
export async function replayedScans(
  ds: DataSource,
  queries: QueryLog['queries'],
): Promise<{ type: string; relation: string; index?: string; rows: number }[][]> {
  return ds.transaction(async (em) => {
    const selects = [];
    for (const q of queries) {
      if (/^\s*(START TRANSACTION|BEGIN|COMMIT)/i.test(q.sql)) continue;
      if (/^\s*SELECT/i.test(q.sql)) selects.push(await planScans(em, q.sql, q.params));
      else await em.query(q.sql, q.params);
    }
    return selects;
  });
}
