import { z } from 'zod';
import { effortSchema } from './blocks.schema';

export const meSchema = z.object({
  userId: z.string(),
  orgId: z.string(),
  role: z.enum(['member', 'author', 'admin']),
  via: z.enum(['apiKey', 'oidc']),
  name: z.string().optional(),
  csrf: z
    .string()
    .optional()
    .describe('Browser sessions: the X-Portal-CSRF token of state-changing requests'),
});
export type Me = z.output<typeof meSchema>;

/** The catalogue as clients need it: never a key or a URL. */
export const modelSchema = z.object({
  id: z.string(),
  contextWindow: z.number().int(),
  vision: z.object({ maxLongSide: z.number().int(), maxShortSide: z.number().int() }).nullable(),
  reasoning: z.boolean(),
  effortLevels: z.array(effortSchema),
  price: z.object({
    inputPerMTok: z.number(),
    outputPerMTok: z.number(),
    cachedInputPerMTok: z.number(),
  }),
});
export type ModelView = z.output<typeof modelSchema>;

/** `GET /v1/auth/providers`: one entry per org with `oidc` in the bootstrap file. */
export const providerSchema = z.object({ orgId: z.string(), name: z.string(), loginUrl: z.string() });
export type Provider = z.output<typeof providerSchema>;
