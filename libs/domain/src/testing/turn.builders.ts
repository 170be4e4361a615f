import { TurnId } from '../ids';
import type { Block, CompactionBlock } from '../block.types';
import type { Message, Role, TurnKind, TurnStatus, TurnTranscript } from '../turn.types';

/** A block before the transcript gives it an id and a seq. */
type Draft<B> = B extends Block ? Omit<B, 'id' | 'seq'> : never;
export type BlockDraft = Draft<Block>;
export interface MessageDraft {
  role: Role;
  blocks: BlockDraft[];
}

export const text = (t: string): BlockDraft => ({ kind: 'text', text: t, narration: false, steering: false });
export const narration = (t: string): BlockDraft => ({
  kind: 'text',
  text: t,
  narration: true,
  steering: false,
});
export const steering = (t: string): BlockDraft => ({
  kind: 'text',
  text: t,
  narration: false,
  steering: true,
});
export const thinking = (t: string): BlockDraft => ({ kind: 'thinking', text: t });
export const toolUse = (callId: string, name = 'search_attachments', args = '{}'): BlockDraft => ({
  kind: 'tool_use',
  callId,
  name,
  arguments: args,
});
export const toolResult = (
  callId: string,
  outcome: 'ok' | 'error' | 'denied' = 'ok',
  content = 'result',
): BlockDraft => ({
  kind: 'tool_result',
  callId,
  outcome,
  content,
  ref: null,
});
export const clarification = (callId: string, answer: string | null): BlockDraft => ({
  kind: 'clarification_request',
  callId,
  question: 'Which one?',
  options: [],
  answer,
});
export const approval = (callId: string, approved: boolean | null, name = 'http_tool'): BlockDraft => ({
  kind: 'approval_request',
  callId,
  name,
  arguments: '{}',
  approved,
  note: null,
});
export const compaction = (over: Partial<Omit<CompactionBlock, 'id' | 'seq' | 'kind'>> = {}): BlockDraft => ({
  kind: 'compaction',
  summary: 'Summary of turns 1–3',
  trigger: 'AUTO',
  coversTurns: { from: 1, to: 3 },
  ...over,
});

export const user = (...blocks: BlockDraft[]): MessageDraft => ({ role: 'user', blocks });
export const assistant = (...blocks: BlockDraft[]): MessageDraft => ({ role: 'assistant', blocks });

/** A transcript of turn `t1` from drafts: blocks get ids `b<seq>` and seq 1, 2, 3… in recorded order. */
export function makeTurn(
  status: TurnStatus,
  messages: MessageDraft[],
  opts: { kind?: TurnKind; n?: number } = {},
): TurnTranscript {
  let seq = 0;
  return {
    turn: { id: TurnId('t1'), n: opts.n ?? 1, kind: opts.kind ?? 'turn', status },
    messages: messages.map((m, i) => ({
      id: `m${i + 1}`,
      turnId: TurnId('t1'),
      role: m.role,
      attachmentIds: [],
      blocks: m.blocks.map((b) => {
        seq += 1;
        return { ...b, id: `b${seq}`, seq } as Block;
      }),
    })),
  };
}

/** Gives every block its seq again by position (after a test moved blocks around); ids are kept. */
export function renumber(transcript: TurnTranscript): TurnTranscript {
  let seq = 0;
  const messages: Message[] = transcript.messages.map((m) => ({
    ...m,
    blocks: m.blocks.map((b) => ({ ...b, seq: ++seq })),
  }));
  return { ...transcript, messages };
}
