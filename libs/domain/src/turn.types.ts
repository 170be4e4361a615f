import type { Block } from './block.types';

export type Role = 'user' | 'assistant';

/** A `user` or `assistant` entry of a turn: an ordered list of blocks. */
export interface Message {
  id: string;
  turnId: string;
  role: Role;
  blocks: Block[];
}

export const TURN_STATUSES = ['queued', 'running', 'paused', 'completed', 'failed', 'cut_off'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];

export const EFFORT_LEVELS = ['low', 'medium', 'high'] as const;
export type Effort = (typeof EFFORT_LEVELS)[number];

export type TurnKind = 'turn' | 'compaction';

export interface Turn {
  id: string;
  conversationId: string;
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
