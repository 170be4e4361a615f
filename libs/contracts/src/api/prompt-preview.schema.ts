import { z } from 'zod';

/** A Chat Completions message exactly as the model receives it. */
export const chatMessageSchema = z
  .looseObject({
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z.union([z.string(), z.array(z.looseObject({ type: z.string() })), z.null()]),
    tool_calls: z.array(z.looseObject({})).optional(),
    tool_call_id: z.string().optional(),
  })
  .describe(
    '`content` is text, null (an assistant message that only calls tools) or parts (`text`, `image_url`) ' +
      'for a user message with pictures; `tool_calls` on an assistant message, `tool_call_id` on a tool result',
  );

export const promptPreviewSchema = z.object({
  model: z.string(),
  contextWindow: z.number().int(),
  compactAt: z.number().describe('share of the context window at which a call compacts first'),
  totalTokens: z.number().int().describe('the projected input: layers, tools and framing'),
  layers: z.array(
    z.object({
      layer: z.enum(['portal_floor', 'author', 'selected_skills', 'catalogue', 'memory']),
      tokens: z.number().int(),
      messages: z.array(chatMessageSchema),
    }),
  ),
});
