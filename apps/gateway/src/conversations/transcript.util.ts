import type { PortalEvent } from '@portal/contracts';
import type { Block, Message, TurnId } from '@portal/domain';
import { summaryForPeople } from '@portal/prompt';

export interface MessageView {
  id: string;
  turnId: TurnId;
  role: Message['role'];
  attachmentIds: string[];
  blocks: Block[];
}

/** A block as people see it: summaries without their references (SPEC 5.2). */
export function blockView(block: Block): Block {
  return block.kind === 'compaction' ? { ...block, summary: summaryForPeople(block.summary) } : block;
}

/** An event as people see it: the block it carries as `blockView` shows it (SSE, like the transcript). */
export function eventView(event: PortalEvent): PortalEvent {
  return 'block' in event ? { ...event, block: blockView(event.block) } : event;
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
