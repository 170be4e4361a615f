import { z } from 'zod';
import { EFFORT_LEVELS, TURN_STATUSES } from '@portal/domain';

const blockBase = { id: z.string(), seq: z.number().int() };

/** The seven block kinds as the API shows them (API.md "Blocks as the API shows them"). */
export const blockSchema = z
  .discriminatedUnion('kind', [
    z.object({
      ...blockBase,
      kind: z.literal('text'),
      text: z.string(),
      narration: z.boolean(),
      steering: z.boolean(),
    }),
    z.object({ ...blockBase, kind: z.literal('thinking'), text: z.string() }),
    z.object({
      ...blockBase,
      kind: z.literal('tool_use'),
      callId: z.string(),
      name: z.string(),
      arguments: z.string().describe('the arguments as the model sent them: JSON text, possibly malformed'),
    }),
    z.object({
      ...blockBase,
      kind: z.literal('tool_result'),
      callId: z.string(),
      outcome: z.enum(['ok', 'error', 'denied']),
      content: z.string(),
      ref: z.string().nullable().describe('`tr_…` reference to the whole stored result'),
    }),
    z.object({
      ...blockBase,
      kind: z.literal('clarification_request'),
      callId: z.string(),
      question: z.string(),
      options: z.array(z.string()),
      answer: z.string().nullable().describe('null while pending'),
    }),
    z.object({
      ...blockBase,
      kind: z.literal('approval_request'),
      callId: z.string(),
      name: z.string(),
      arguments: z.string(),
      approved: z.boolean().nullable().describe('null while pending'),
      note: z.string().nullable(),
    }),
    z.object({
      ...blockBase,
      kind: z.literal('compaction'),
      summary: z.string().describe('references removed for people'),
      trigger: z.enum(['AUTO', 'MANUAL']),
      coversTurns: z.object({ from: z.number().int(), to: z.number().int() }),
    }),
  ])
  .describe('A block: `{ id, seq, kind, ... }` with the fields of its kind');

export const turnStatusSchema = z.enum(TURN_STATUSES);
export const effortSchema = z.enum(EFFORT_LEVELS);
export const turnKindSchema = z.enum(['turn', 'compaction']);
