import type { TurnId } from '@portal/domain';
import { createHash } from 'node:crypto';

/** A request id travels in a BullMQ job id, which allows no `:` of its own. */
const REQUEST_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function isCompactionRequestId(requestId: string): boolean {
  return REQUEST_ID.test(requestId);
}

/**
 * The request id of a manual compaction: one per `/compact` turn, so whoever enqueues it again (the
 * orchestrator's reconciler) gets the same job and the same block.
 */
export const MANUAL_REQUEST_ID = 'manual';

/** `compact:<turnId>:<requestId>`: enqueueing the same request twice makes one job. */
export function compactionJobId(turnId: TurnId, requestId: string): string {
  if (!isCompactionRequestId(requestId)) {
    throw new Error(`A compaction request id must be 1-128 letters, digits, "_" or "-": ${requestId}`);
  }
  return `compact:${turnId}:${requestId}`;
}

/** A uuid derived from its parts, so a job run twice finds the block it wrote the first time. */
function derivedUuid(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\n')).digest('hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The id of the compaction block a request writes. */
export function compactionBlockId(turnId: TurnId, requestId: string): string {
  return derivedUuid('compaction', turnId, requestId);
}

/** The id of the portal's "Context summarised" line after a manual compaction block. */
export function compactionLineId(turnId: TurnId, requestId: string): string {
  return derivedUuid('compaction-line', turnId, requestId);
}
