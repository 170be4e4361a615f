import { type Block, type BlockKind, type Message, TurnId } from '@portal/domain';
import type { BlockEntity } from '../entities/block.entity';
import type { MessageEntity } from '../entities/message.entity';

/** A block as callers append it before it has an id or a position. */
export type NewBlock = Block extends infer B ? (B extends unknown ? Omit<B, 'id' | 'seq'> : never) : never;

export type BlockRow = Pick<BlockEntity, 'id' | 'seq' | 'kind' | 'payload'>;
export type MessageRow = Pick<MessageEntity, 'id' | 'turnId' | 'role' | 'attachmentIds'>;

export function toBlock(row: BlockRow): Block {
  return { ...row.payload, id: row.id, seq: row.seq, kind: row.kind } as Block;
}

/** The kind-specific fields that go into `blocks.payload`. */
export function toBlockPayload(block: Block | NewBlock): {
  kind: BlockKind;
  payload: Record<string, unknown>;
} {
  const { kind, ...rest } = block;
  const payload: Record<string, unknown> = { ...rest };
  delete payload['id'];
  delete payload['seq'];
  return { kind, payload };
}

export function toMessage(row: MessageRow, blocks: Block[]): Message {
  return { id: row.id, turnId: TurnId(row.turnId), role: row.role, blocks, attachmentIds: row.attachmentIds };
}
