import { ConversationId, OrgId, TurnId, UserId } from '@portal/domain';
import type { OrgEntity } from '../entities/org.entity';
import type { ToolResultEntity } from '../entities/tool-result.entity';
import type { TraceEntryEntity } from '../entities/trace-entry.entity';
import type { UsageRowEntity } from '../entities/usage-row.entity';
import type { UserEntity } from '../entities/user.entity';
import type { Org, ToolResult, TraceEntry, UsageRow, User } from '../records.types';

export function toOrg(e: OrgEntity): Org {
  return { id: OrgId(e.id), name: e.name };
}

export function toUser(e: UserEntity): User {
  return { orgId: OrgId(e.orgId), id: UserId(e.id), role: e.role };
}

export function toUsageRow(e: UsageRowEntity): UsageRow {
  return {
    turnId: TurnId(e.turnId),
    kind: e.kind,
    model: e.model,
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    cachedTokens: e.cachedTokens,
    cost: Number(e.cost),
  };
}

export function toTraceEntry(e: TraceEntryEntity): TraceEntry {
  return { turnId: TurnId(e.turnId), kind: e.kind, skillIds: e.skillIds, at: e.at };
}

export function toToolResult(e: ToolResultEntity): ToolResult {
  return {
    ref: e.ref,
    conversationId: ConversationId(e.conversationId),
    turnId: TurnId(e.turnId),
    callId: e.callId,
    content: e.content,
  };
}
