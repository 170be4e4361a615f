import { randomUUID } from 'node:crypto';
import type { Block, Turn, TurnKind, TurnStatus } from '@portal/domain';
import type { DataSource, Logger } from 'typeorm';
import { AgentRepository } from '../repositories/agent.repository';
import { BlockRepository } from '../repositories/block.repository';
import { ConversationRepository } from '../repositories/conversation.repository';
import { OrgRepository } from '../repositories/org.repository';
import { TurnRepository } from '../repositories/turn.repository';
import { UserRepository } from '../repositories/user.repository';

/** An org with an author, a member and an agent `researcher`. */
export async function seedOrg(ds: DataSource, orgId: string): Promise<void> {
  await new OrgRepository(ds).upsert(orgId);
  const users = new UserRepository(ds);
  await users.upsert(orgId, 'alice', 'author');
  await users.upsert(orgId, 'bob', 'member');
  await new AgentRepository(ds).upsert(orgId, {
    id: 'researcher',
    name: 'Researcher',
    instructions: 'Research.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [],
    reviewer: null,
    compactionGuidance: null,
  });
}

export async function newConversation(ds: DataSource, orgId: string, userId = 'alice'): Promise<string> {
  const conversation = await new ConversationRepository(ds).create(orgId, userId, 'researcher');
  if (!conversation) throw new Error('no conversation');
  return conversation.id;
}

type BlockDraft = Block extends infer B ? (B extends unknown ? Omit<B, 'id' | 'seq'> : never) : never;

/** A turn with its user text and, when given, an assistant message holding `blocks`, then settled. */
export async function settledTurn(
  ds: DataSource,
  orgId: string,
  conversationId: string,
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
    const blocks = new BlockRepository(ds);
    const message = await blocks.addMessage(orgId, created.turn.id, 'assistant', { seq: 2 });
    await blocks.appendBlocks(
      orgId,
      message!.id,
      opts.blocks.map((b, i) => ({ ...b, id: randomUUID(), seq: i + 2 }) as Block),
    );
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
