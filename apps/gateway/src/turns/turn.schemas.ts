import { z } from 'zod';

export const clarificationAnswerSchema = z.strictObject({ answer: z.string().trim().min(1).max(20_000) });

export const approvalAnswerSchema = z.strictObject({
  approved: z.boolean(),
  note: z.string().max(2_000).optional(),
});
