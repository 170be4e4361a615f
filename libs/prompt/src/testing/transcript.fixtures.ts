import {
  AttachmentId,
  type Block,
  type CompactionBlock,
  type Message,
  type Role,
  TurnId,
  type TurnKind,
  type TurnStatus,
  type TurnTranscript,
} from '@portal/domain';
import type { AttachmentForPrompt } from '../attachments';
import { resolveLimits, type Limits } from '../limits';

/** Builders for transcripts in tests: blocks get ids and seq in recorded order. */

type Draft<B> = B extends Block ? Omit<B, 'id' | 'seq'> : never;
export type BlockDraft = Draft<Block>;
export interface MessageDraft {
  role: Role;
  blocks: BlockDraft[];
  attachmentIds: string[];
}

export const text = (t: string): BlockDraft => ({ kind: 'text', text: t, narration: false, steering: false });
export const narration = (t: string): BlockDraft => ({
  kind: 'text',
  text: t,
  narration: true,
  steering: false,
});
export const thinking = (t: string): BlockDraft => ({ kind: 'thinking', text: t });
export const use = (callId: string, name: string, args: string): BlockDraft => ({
  kind: 'tool_use',
  callId,
  name,
  arguments: args,
});
export const result = (
  callId: string,
  content: string,
  opts: { outcome?: 'ok' | 'error' | 'denied'; ref?: string | null } = {},
): BlockDraft => ({
  kind: 'tool_result',
  callId,
  outcome: opts.outcome ?? 'ok',
  content,
  ref: opts.ref ?? null,
});
export const compactionBlock = (
  to: number,
  summary = `Summary of turns 1–${to}`,
): Draft<CompactionBlock> => ({
  kind: 'compaction',
  summary,
  trigger: 'AUTO',
  coversTurns: { from: 1, to },
});

export const user = (t: string, attachmentIds: string[] = []): MessageDraft => ({
  role: 'user',
  blocks: [text(t)],
  attachmentIds,
});
export const steer = (t: string, attachmentIds: string[] = []): MessageDraft => ({
  role: 'user',
  blocks: [{ kind: 'text', text: t, narration: false, steering: true }],
  attachmentIds,
});
export const assistant = (...blocks: BlockDraft[]): MessageDraft => ({
  role: 'assistant',
  blocks,
  attachmentIds: [],
});

export function messages(turnId: TurnId, drafts: MessageDraft[]): Message[] {
  let seq = 0;
  return drafts.map((m, i) => ({
    id: `${turnId}_m${i + 1}`,
    turnId,
    role: m.role,
    attachmentIds: m.attachmentIds,
    blocks: m.blocks.map((b) => ({ ...b, id: `${turnId}_b${++seq}`, seq }) as Block),
  }));
}

export function turn(
  n: number,
  drafts: MessageDraft[],
  opts: { status?: TurnStatus; kind?: TurnKind } = {},
): TurnTranscript {
  const id = `t${n}`;
  return {
    turn: { id: TurnId(id), n, kind: opts.kind ?? 'turn', status: opts.status ?? 'completed' },
    messages: messages(TurnId(id), drafts),
  };
}

/** A simple completed turn: the person's text and the answer. */
export const chat = (n: number, question: string, answer: string): TurnTranscript =>
  turn(n, [user(question), assistant(text(answer))]);

export const limits: Limits = resolveLimits();

export function documentAttachment(id: string, over: Partial<AttachmentForPrompt> = {}): AttachmentForPrompt {
  return {
    id: AttachmentId(id),
    kind: 'document',
    filename: `${id}.pdf`,
    mimeType: 'application/pdf',
    status: 'finished',
    pagesRead: 2,
    pageCount: 2,
    unreadablePages: [],
    headings: [],
    chars: 100,
    picture: null,
    error: null,
    ...over,
  };
}

export function pictureAttachment(id: string, over: Partial<AttachmentForPrompt> = {}): AttachmentForPrompt {
  return {
    id: AttachmentId(id),
    kind: 'picture',
    filename: `${id}.jpg`,
    mimeType: 'image/jpeg',
    status: 'finished',
    pagesRead: 0,
    pageCount: null,
    unreadablePages: [],
    headings: [],
    chars: null,
    picture: { width: 1024, height: 768, originalWidth: 4032, originalHeight: 3024 },
    error: null,
    imageUrl: `data:image/jpeg;base64,${id}`,
    ...over,
  };
}
