import { z } from 'zod';
import { effortSchema, turnKindSchema } from './blocks.schema';

export const postMessageSchema = z.strictObject({
  text: z
    .string()
    .min(1)
    .max(200_000)
    .describe('leading `/slug` tokens select skills; `/compact [instructions]` compacts'),
  attachmentIds: z.array(z.string()).max(32).default([]),
  effort: effortSchema.optional().describe("overrides the agent's effort for this turn"),
});
export type PostMessage = z.output<typeof postMessageSchema>;

export const postMessageResultSchema = z.union([
  z.object({ turnId: z.string(), kind: turnKindSchema }),
  z.object({ turnId: z.string(), steered: z.literal(true) }),
]);
export type PostMessageResult = z.output<typeof postMessageResultSchema>;
