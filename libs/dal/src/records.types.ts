import type { AgentId, ConversationId, Effort, OrgId, TurnId, UserId } from '@portal/domain';

/** Plain records for the rows the domain library has no type for yet. */

export type UserRole = 'member' | 'author' | 'admin';
export type SkillVisibility = 'org' | 'private';
export type SkillStatus = 'active' | 'inactive';
export type UsageKind = 'turn' | 'compaction' | 'summary' | 'review';
export type TraceKind = 'SKILL_SELECT';
/** The upload as sent, or a picture's copy reduced to a size limit (see reducedVariant). */
export type BlobVariant = 'original' | `reduced-${number}x${number}`;

export interface Org {
  id: OrgId;
  name: string;
}

export interface User {
  orgId: OrgId;
  id: UserId;
  role: UserRole;
}

/** An HTTP tool an agent declares (API.md bootstrap file). */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  url: string;
  requiresApproval: boolean;
}

/** An MCP server an agent takes tools from (API.md bootstrap file, streamable HTTP transport). */
export interface AgentMcpServer {
  name: string;
  url: string;
  /** Header name → the env var holding its value, read when the server is reached. */
  headersFromEnv?: Record<string, string>;
  /** Only these of the server's tools are offered; all when absent. */
  tools?: string[];
  /** `true`: every call waits for the person's approval; a list: the calls of these tools. */
  requiresApproval?: boolean | string[];
}

/** One MCP tool a turn offers: the model calls it by `name` (`<server>__<tool>`, provider-safe). */
export interface McpOfferedTool {
  name: string;
  server: string;
  /** The tool's name on its server. */
  tool: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** The MCP tools listed when a turn started, and the servers that could not be reached then. */
export interface McpToolSnapshot {
  tools: McpOfferedTool[];
  unavailable: string[];
}

export interface Agent {
  orgId: OrgId;
  id: AgentId;
  name: string;
  instructions: string;
  model: string;
  effort: Effort;
  tools: AgentTool[];
  mcpServers: AgentMcpServer[];
  reviewer: string | null;
  compactionGuidance: string | null;
}

export interface Skill {
  orgId: OrgId;
  id: string;
  slug: string;
  name: string;
  description: string;
  instructions: string;
  visibility: SkillVisibility;
  ownerId: string | null;
  status: SkillStatus;
  published: boolean;
}

export interface Conversation {
  orgId: OrgId;
  id: ConversationId;
  userId: UserId;
  agentId: AgentId;
  title: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface UsageRow {
  turnId: TurnId;
  kind: UsageKind;
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cost: number;
}

export interface TraceEntry {
  turnId: TurnId;
  kind: TraceKind;
  skillIds: string[];
  at: Date;
}

export interface ToolResult {
  ref: string;
  conversationId: ConversationId;
  turnId: TurnId;
  callId: string;
  content: string;
}
