import type { ConversationId, TurnId } from './ids';
import type { Block } from './block.types';

export type Role = 'user' | 'assistant';

/** A `user` or `assistant` entry of a turn: an ordered list of blocks. */
export interface Message {
  id: string;
  turnId: TurnId;
  role: Role;
  blocks: Block[];
  /** Attachments sent with a user message, in the order given. Empty on assistant messages. */
  attachmentIds: string[];
}

export const TURN_STATUSES = ['queued', 'running', 'paused', 'completed', 'failed', 'cut_off'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

export const EFFORT_LEVELS = ['low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORT_LEVELS)[number];

export type TurnKind = 'turn' | 'compaction';

export interface Turn {
  id: TurnId;
  conversationId: ConversationId;
  /** 1, 2, 3… per conversation, compaction turns included. */
  n: number;
  kind: TurnKind;
  status: TurnStatus;
  effort: Effort;
  model: string;
  contextTokens: number | null;
  selectedSkillIds: string[];
  catalogueSkillIds: string[];
  error: string | null;
}

/**
 * A turn with its messages in the order they were recorded. A turn opens with the person's user
 * message; steering messages are further user messages between assistant messages.
 */
export interface TurnTranscript {
  turn: Pick<Turn, 'id' | 'n' | 'kind' | 'status'>;
  messages: Message[];
}

/** What one model call reads of the transcript before the new message (SPEC section 4). */
export interface MemoryWindow {
  /** The newest compaction block of the conversation, with the number of the turn that holds it. */
  summary: { turnN: number; block: import('./block.types').CompactionBlock } | null;
  /** Past turns after the summary (the compaction turn itself excluded), oldest first. */
  turns: TurnTranscript[];
}
