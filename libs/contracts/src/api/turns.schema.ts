import { z } from 'zod';
import { effortSchema, turnKindSchema, turnStatusSchema } from './blocks.schema';

export const turnSchema = z.object({
  id: z.string(),
  conversationId: z.string(),
  n: z.number().int(),
  kind: turnKindSchema,
  status: turnStatusSchema,
  effort: effortSchema,
  model: z.string(),
  contextTokens: z.number().int().nullable(),
  selectedSkillIds: z.array(z.string()),
  catalogueSkillIds: z.array(z.string()),
  error: z.string().nullable(),
});
export type TurnView = z.output<typeof turnSchema>;

export const usageRowSchema = z.object({
  kind: z.enum(['turn', 'compaction', 'summary', 'review']),
  model: z.string(),
  inputTokens: z.number().int(),
  outputTokens: z.number().int(),
  cachedTokens: z.number().int(),
  cost: z.number().describe('USD'),
});
export type UsageRowDto = z.output<typeof usageRowSchema>;

export const traceEntrySchema = z.object({
  kind: z.literal('SKILL_SELECT'),
  skillIds: z.array(z.string()),
  at: z.iso.datetime(),
});
export type TraceView = z.output<typeof traceEntrySchema>;

export const turnAckSchema = z.object({ turnId: z.string(), status: turnStatusSchema });
export type TurnAck = z.output<typeof turnAckSchema>;

/** `POST /v1/turns/:id/retry`: the new turn. */
export const retrySchema = z.object({ turnId: z.string() });

export const clarificationAnswerSchema = z.strictObject({ answer: z.string().trim().min(1).max(20_000) });

export const approvalAnswerSchema = z.strictObject({
  approved: z.boolean(),
  note: z.string().max(2_000).optional(),
});

/** `POST /v1/turns/:id/requests/:blockId`: which one applies depends on the pending request. */
export const requestAnswerSchema = z.union([clarificationAnswerSchema, approvalAnswerSchema]);
