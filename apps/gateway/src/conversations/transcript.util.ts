import type { Block, Message } from '@portal/domain';
import { summaryForPeople } from '@portal/prompt';

export interface MessageView {
  id: string;
  turnId: string;
  role: Message['role'];
  attachmentIds: string[];
  blocks: Block[];
}

/** A block as people see it: summaries without their references (SPEC 5.2). */
export function blockView(block: Block): Block {
  return block.kind === 'compaction' ? { ...block, summary: summaryForPeople(block.summary) } : block;
}

export function messageView(message: Message): MessageView {
  return {
    id: message.id,
    turnId: message.turnId,
    role: message.role,
    attachmentIds: message.attachmentIds,
    blocks: message.blocks.map(blockView),
  };
}
