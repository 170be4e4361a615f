import type {
  ClarificationRequestBlock,
  OrgId,
  ToolOutcome,
  ToolUseBlock,
  Turn,
  UserId,
} from '@portal/domain';

/** What a tool may know of the turn that calls it. */
export interface ToolContext {
  orgId: OrgId;
  turn: Turn;
  /** The conversation's owner: tools act with what this user may see. */
  userId: UserId;
  /** Aborted when the turn is cut off or the worker hands it back. */
  signal: AbortSignal;
}

export type ClarificationDraft = Omit<ClarificationRequestBlock, 'id' | 'seq'>;

export interface ToolResultRun {
  outcome: ToolOutcome;
  content: string;
}

/** A tool answers with a result, or pauses the turn with a request for the person. */
export type ToolRun = ToolResultRun | { pause: ClarificationDraft };

export type ToolArgs = Record<string, unknown>;

export interface ToolExecutor {
  run(args: ToolArgs, ctx: ToolContext, use: ToolUseBlock): Promise<ToolRun>;
}

export const ok = (content: string): ToolResultRun => ({ outcome: 'ok', content });
export const error = (content: string): ToolResultRun => ({ outcome: 'error', content });
