import type { Agent, Conversation } from '@portal/dal';
import { AgentId, ConversationId, OrgId, TurnId, UserId, type Turn } from '@portal/domain';
import type { ModelEntry } from '@portal/model';

/**
 * Plain records as repositories answer them, for unit tests to hand to mocks: neutral defaults,
 * the fields a test is about given in `over`. Type imports from the DAL only, so none of it loads.
 */

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

/** Turn 1 of `conv-1`, queued, with no skills. */
export function turnRecord(over: Partial<Turn> = {}): Turn {
  return {
    id: TurnId('turn-1'),
    conversationId: ConversationId('conv-1'),
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

/** An untitled conversation of `user-1` with `agent-1`. */
export function conversationRecord(over: Partial<Conversation> = {}): Conversation {
  return {
    orgId: OrgId('org-1'),
    id: ConversationId('conv-1'),
    userId: UserId('user-1'),
    agentId: AgentId('agent-1'),
    title: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...over,
  };
}

/** An agent with instructions only: no tools, MCP servers, reviewer or compaction guidance. */
export function agentRecord(over: Partial<Agent> = {}): Agent {
  return {
    orgId: OrgId('org-1'),
    id: AgentId('agent-1'),
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
