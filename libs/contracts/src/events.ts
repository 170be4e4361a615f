import { isTerminal, type AttachmentManifest, type Block, type TurnStatus } from '@portal/domain';

/** Server-Sent Events of a conversation (API.md "Events"). The stream id is the SSE `id:`. */
export type PortalEvent =
  | { type: 'turn_started'; turnId: string }
  | { type: 'turn_state'; turnId: string; status: TurnStatus }
  | { type: 'block_started'; turnId: string; blockId: string; kind: Block['kind'] }
  | { type: 'text_delta'; turnId: string; blockId: string; text: string }
  | { type: 'thinking_delta'; turnId: string; blockId: string; text: string }
  | { type: 'block_finished'; turnId: string; block: Block }
  | { type: 'compaction_started'; turnId: string }
  | { type: 'compaction_finished'; turnId: string; block: Block }
  | { type: 'usage'; turnId: string; row: UsageRowDto }
  | { type: 'turn_finished'; turnId: string; status: TurnStatus; error?: string }
  /** Reading progress of an attachment of the conversation; not tied to a turn. */
  | { type: 'attachment_progress'; turnId?: undefined; attachment: AttachmentManifest };

export type PortalEventType = PortalEvent['type'];

/** What any turn publishes when its status changes: `turn_state`, then `turn_finished` once settled. */
export function turnStatusEvents(turnId: string, status: TurnStatus, error?: string): PortalEvent[] {
  const state: PortalEvent = { type: 'turn_state', turnId, status };
  if (!isTerminal(status)) return [state];
  return [state, { type: 'turn_finished', turnId, status, ...(error !== undefined && { error }) }];
}

export interface UsageRowDto {
  kind: 'turn' | 'compaction' | 'summary' | 'review';
  model: string;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cost: number;
}

/** Redis stream key of a conversation's events, under the portal prefix. */
export function conversationEventsKey(prefix: string, conversationId: string): string {
  return `${prefix}:events:{${conversationId}}`;
}

/**
 * Pub/sub channel announcing new events of a conversation (the message is the newest id): a reader
 * subscribes to the conversations it serves and reads the stream when told. The hash tag is the
 * stream's, so on Redis Cluster a sharded channel lives on the stream's shard.
 */
export function conversationEventsChannel(prefix: string, conversationId: string): string {
  return `${prefix}:events-new:{${conversationId}}`;
}

/** Redis pub/sub channel on which the gateway announces a cancelled turn's id to the workers. */
export function cancelChannel(prefix: string): string {
  return `${prefix}:cancel`;
}
