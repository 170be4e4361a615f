import { z } from 'zod';
import { blockSchema, effortSchema, turnKindSchema, turnStatusSchema } from './blocks.schema';

export const createConversationSchema = z.strictObject({ agentId: z.string().min(1) });

export const createdSchema = z.object({ id: z.string() });

export const conversationSummarySchema = z.object({
  id: z.string(),
  agentId: z.string(),
  title: z.string().nullable(),
  updatedAt: z.iso.datetime(),
});
export type ConversationSummary = z.output<typeof conversationSummarySchema>;

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
