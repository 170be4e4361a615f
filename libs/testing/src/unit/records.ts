import type { Agent, Conversation } from '@portal/dal';
import { AgentId, ConversationId, OrgId, TurnId, UserId, type Turn } from '@portal/domain';
import type { ModelEntry } from '@portal/model';

/**
 * Plain records as repositories answer them, for unit tests to hand to mocks: neutral defaults,
 * the fields a test is about given in `over`. Type imports from the DAL only, so none of it loads.
 */

/**
 * The ids the records default to, branded where they are made up (repositories take OrgId,
 * TurnId…). The turn is `t1`, as `makeTurn` (`@portal/domain/testing`) names its turn. A spec
 * adds the ids it needs beside them: `{ ...ID, otherUser: UserId('user-bob') }`.
 */
export const ID = {
  org: OrgId('org-1'),
  user: UserId('user-1'),
  agent: AgentId('agent-1'),
  conversation: ConversationId('conv-1'),
  turn: TurnId('t1'),
} as const;

/** A catalogue model: no vision, no reasoning, $1 per million tokens of each kind. */
export function modelEntry(over: Partial<ModelEntry> = {}): ModelEntry {
  const id = over.id ?? 'gpt-test';
  return {
    id,
    model: id,
    baseURL: 'http://model.invalid',
    contextWindow: 100_000,
    vision: null,
    reasoning: false,
    price: { inputPerMTok: 1, outputPerMTok: 1, cachedInputPerMTok: 1 },
    ...over,
  };
}

/** Turn 1 (`ID.turn`) of `ID.conversation`, queued, with no skills. */
export function turnRecord(over: Partial<Turn> = {}): Turn {
  return {
    id: ID.turn,
    conversationId: ID.conversation,
    n: 1,
    kind: 'turn',
    status: 'queued',
    effort: 'medium',
    model: 'gpt-test',
    contextTokens: null,
    selectedSkillIds: [],
    catalogueSkillIds: [],
    error: null,
    ...over,
  };
}

/** An untitled conversation (`ID.conversation`) of `ID.user` with `ID.agent`. */
export function conversationRecord(over: Partial<Conversation> = {}): Conversation {
  return {
    orgId: ID.org,
    id: ID.conversation,
    userId: ID.user,
    agentId: ID.agent,
    title: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...over,
  };
}

/** An agent with instructions only: no tools, MCP servers, reviewer or compaction guidance. */
export function agentRecord(over: Partial<Agent> = {}): Agent {
  return {
    orgId: ID.org,
    id: ID.agent,
    name: 'Helper',
    instructions: 'Be brief.',
    model: 'gpt-test',
    effort: 'medium',
    tools: [],
    mcpServers: [],
    reviewer: null,
    compactionGuidance: null,
    ...over,
  };
}
