import { z } from 'zod';
import { EFFORT_LEVELS } from '@portal/domain';

export const postMessageSchema = z.strictObject({
  text: z.string().min(1).max(200_000),
  attachmentIds: z.array(z.string()).max(32).default([]),
  /** Overrides the agent's effort for this turn. */
  effort: z.enum(EFFORT_LEVELS).optional(),
});
export type PostMessage = z.output<typeof postMessageSchema>;

export type PostMessageResult =
  { turnId: string; kind: 'turn' | 'compaction' } | { turnId: string; steered: true };
