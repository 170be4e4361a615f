import { z } from 'zod';
import { isValidSlug } from '@portal/prompt';

const skillFields = {
  name: z.string().trim().min(1).max(200),
  /** One sentence: it is the skill's catalogue line. */
  description: z.string().trim().min(1).max(500),
  instructions: z.string().max(100_000),
  visibility: z.enum(['org', 'private']),
  status: z.enum(['active', 'inactive']),
  published: z.boolean(),
};

export const skillSchema = z.strictObject({
  slug: z.string().refine(isValidSlug, 'must match [a-z0-9][a-z0-9-]{0,63} and not be "compact"'),
  name: skillFields.name,
  description: skillFields.description,
  instructions: skillFields.instructions,
  visibility: skillFields.visibility.default('org'),
  status: skillFields.status.default('active'),
  published: skillFields.published.default(false),
});
export type SkillSpec = z.output<typeof skillSchema>;

/** The slug never changes: conversations name skills by it. */
export const skillPatchSchema = z.strictObject(skillFields).partial();

/** A skill as the API shows it. */
export const skillViewSchema = skillSchema.extend({ id: z.string(), ownerId: z.string().nullable() });
export type SkillView = z.output<typeof skillViewSchema>;
