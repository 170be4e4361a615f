import type { OrgEntity } from '../entities/org.entity';
import type { ToolResultEntity } from '../entities/tool-result.entity';
import type { TraceEntryEntity } from '../entities/trace-entry.entity';
import type { UsageRowEntity } from '../entities/usage-row.entity';
import type { UserEntity } from '../entities/user.entity';
import type { Org, ToolResult, TraceEntry, UsageRow, User } from '../records.types';

export function toOrg(e: OrgEntity): Org {
  return { id: e.id, name: e.name };
}

export function toUser(e: UserEntity): User {
  return { orgId: e.orgId, id: e.id, role: e.role };
}

export function toUsageRow(e: UsageRowEntity): UsageRow {
  return {
    turnId: e.turnId,
    kind: e.kind,
    model: e.model,
    inputTokens: e.inputTokens,
    outputTokens: e.outputTokens,
    cachedTokens: e.cachedTokens,
    cost: Number(e.cost),
  };
}

export function toTraceEntry(e: TraceEntryEntity): TraceEntry {
  return { turnId: e.turnId, kind: e.kind, skillIds: e.skillIds, at: e.at };
}

export function toToolResult(e: ToolResultEntity): ToolResult {
  return {
    ref: e.ref,
    conversationId: e.conversationId,
    turnId: e.turnId,
    callId: e.callId,
    content: e.content,
  };
}
