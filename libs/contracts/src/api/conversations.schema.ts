import { z } from 'zod';
import { blockSchema, effortSchema, turnKindSchema, turnStatusSchema } from './blocks.schema';

export const createConversationSchema = z.strictObject({ agentId: z.string().min(1) });

/** `GET /v1/conversations?q=`: web search syntax; blank lists instead. */
export const searchQuerySchema = z.string().trim().max(500).optional();

export const renameConversationSchema = z.strictObject({ title: z.string().trim().min(1).max(200) });

export const createdSchema = z.object({ id: z.string() });

export const conversationSummarySchema = z.object({
  id: z.string(),
  agentId: z.string(),
  title: z.string().nullable(),
  updatedAt: z.iso.datetime(),
});
export type ConversationSummary = z.output<typeof conversationSummarySchema>;

export const conversationHitSchema = conversationSummarySchema.extend({
  snippet: z.string().describe('plain text around the match, at most 200 characters'),
});
export type ConversationHit = z.output<typeof conversationHitSchema>;

export const conversationSchema = z.object({
  id: z.string(),
  agentId: z.string(),
  title: z.string().nullable().describe('null until the summary call names it'),
  turns: z.array(
    z.object({
      id: z.string(),
      n: z.number().int(),
      kind: turnKindSchema,
      status: turnStatusSchema,
      effort: effortSchema,
      error: z.string().nullable().describe('why a failed or cut-off turn ended'),
      model: z.string(),
      contextTokens: z.number().int().nullable(),
      usage: z
        .object({
          inputTokens: z.number().int(),
          outputTokens: z.number().int(),
          cachedTokens: z.number().int(),
          cost: z.number(),
        })
        .describe("the turn's usage rows summed (0 without any); cost in USD"),
    }),
  ),
});
export type ConversationView = z.output<typeof conversationSchema>;

/** A transcript entry for display: summaries without references. */
export const messageSchema = z.object({
  id: z.string(),
  turnId: z.string(),
  role: z.enum(['user', 'assistant']),
  attachmentIds: z.array(z.string()),
  blocks: z.array(blockSchema),
});
export type MessageView = z.output<typeof messageSchema>;
