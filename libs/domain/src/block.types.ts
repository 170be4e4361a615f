/** The seven block kinds of SPEC.md section 8, as the API shows them. */
export const BLOCK_KINDS = [
  'thinking',
  'text',
  'tool_use',
  'tool_result',
  'clarification_request',
  'approval_request',
  'compaction',
] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number];

export type ToolOutcome = 'ok' | 'error' | 'denied';
export type CompactionTrigger = 'AUTO' | 'MANUAL';

interface BlockBase {
  id: string;
  /** Position within the turn: strictly increasing across all messages of one turn. */
  seq: number;
}

export interface TextBlock extends BlockBase {
  kind: 'text';
  text: string;
  /** Pre-tool narration: text produced together with tool calls. Never replayed. */
  narration: boolean;
  /** A message sent while the turn was running, handed to it as text. */
  steering: boolean;
}

export interface ThinkingBlock extends BlockBase {
  kind: 'thinking';
  text: string;
}

export interface ToolUseBlock extends BlockBase {
  kind: 'tool_use';
  callId: string;
  name: string;
  /** The arguments as the model sent them: JSON text, possibly malformed. */
  arguments: string;
}

export interface ToolResultBlock extends BlockBase {
  kind: 'tool_result';
  callId: string;
  outcome: ToolOutcome;
  content: string;
  /** `tr_…` reference to the whole stored result; null when the result is not stored apart. */
  ref: string | null;
}

export interface ClarificationRequestBlock extends BlockBase {
  kind: 'clarification_request';
  /** The `ask_clarification` call this request belongs to. */
  callId: string;
  question: string;
  options: string[];
  /** null while pending. */
  answer: string | null;
}

export interface ApprovalRequestBlock extends BlockBase {
  kind: 'approval_request';
  callId: string;
  name: string;
  arguments: string;
  /** null while pending. */
  approved: boolean | null;
  note: string | null;
}

export interface CompactionBlock extends BlockBase {
  kind: 'compaction';
  summary: string;
  trigger: CompactionTrigger;
  coversTurns: { from: number; to: number };
}

export type Block =
  | TextBlock
  | ThinkingBlock
  | ToolUseBlock
  | ToolResultBlock
  | ClarificationRequestBlock
  | ApprovalRequestBlock
  | CompactionBlock;

export type BlockOf<K extends BlockKind> = Extract<Block, { kind: K }>;

export type RequestBlock = ClarificationRequestBlock | ApprovalRequestBlock;

export function isPendingRequest(block: Block): block is RequestBlock {
  return (
    (block.kind === 'clarification_request' && block.answer === null) ||
    (block.kind === 'approval_request' && block.approved === null)
  );
}
