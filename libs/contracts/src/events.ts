import { z } from 'zod';
import { BLOCK_KINDS, type ConversationId, isTerminal, type TurnId, type TurnStatus } from '@portal/domain';
import { attachmentManifestSchema } from './api/attachments.schema';
import { blockSchema, turnStatusSchema } from './api/blocks.schema';
import { usageRowSchema } from './api/turns.schema';

const turnEvent = <T extends string, S extends z.ZodRawShape>(type: T, shape: S) =>
  z.object({ type: z.literal(type), turnId: z.string(), ...shape });

/** Server-Sent Events of a conversation (API.md "Events"): the `data:` JSON. The stream id is the SSE `id:`. */
export const portalEventSchema = z.discriminatedUnion('type', [
  turnEvent('turn_started', {}),
  turnEvent('turn_state', { status: turnStatusSchema }),
  turnEvent('block_started', { blockId: z.string(), kind: z.enum(BLOCK_KINDS) }),
  turnEvent('text_delta', { blockId: z.string(), text: z.string() }),
  turnEvent('thinking_delta', { blockId: z.string(), text: z.string() }),
  turnEvent('block_finished', { block: blockSchema }),
  turnEvent('compaction_started', {}),
  turnEvent('compaction_finished', { block: blockSchema }),
  turnEvent('usage', { row: usageRowSchema }),
  turnEvent('turn_finished', { status: turnStatusSchema, error: z.string().optional() }),
  z
    .object({
      type: z.literal('attachment_progress'),
      turnId: z.never().optional(),
      attachment: attachmentManifestSchema,
    })
    .describe('Reading progress of an attachment of the conversation; not tied to a turn'),
]);
export type PortalEvent = z.output<typeof portalEventSchema>;

export type PortalEventType = PortalEvent['type'];

/** What any turn publishes when its status changes: `turn_state`, then `turn_finished` once settled. */
export function turnStatusEvents(turnId: TurnId, status: TurnStatus, error?: string): PortalEvent[] {
  const state: PortalEvent = { type: 'turn_state', turnId, status };
  if (!isTerminal(status)) return [state];
  return [state, { type: 'turn_finished', turnId, status, ...(error !== undefined && { error }) }];
}

/** Redis stream key of a conversation's events, under the portal prefix. */
export function conversationEventsKey(prefix: string, conversationId: ConversationId): string {
  return `${prefix}:events:{${conversationId}}`;
}

/**
 * Pub/sub channel announcing new events of a conversation (the message is the newest id): a reader
 * subscribes to the conversations it serves and reads the stream when told. The hash tag is the
 * stream's, so on Redis Cluster a sharded channel lives on the stream's shard.
 */
export function conversationEventsChannel(prefix: string, conversationId: ConversationId): string {
  return `${prefix}:events-new:{${conversationId}}`;
}

/** Redis pub/sub channel on which the gateway announces a cancelled turn's id to the workers. */
export function cancelChannel(prefix: string): string {
  return `${prefix}:cancel`;
}
