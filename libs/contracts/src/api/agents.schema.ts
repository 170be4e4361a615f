import { z } from 'zod';
import { EFFORT_LEVELS } from '@portal/domain';
import { BUILTIN_TOOL_NAMES, SLUG_PATTERN } from '@portal/prompt';

/** Ids of orgs, users and agents: chosen by people, used in URLs. */
export const idSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-"');

export const slugSchema = z.string().regex(SLUG_PATTERN, 'must match [a-z0-9][a-z0-9-]{0,63}');

export const agentToolSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "_" or "-"')
    .refine(
      (name) => !(BUILTIN_TOOL_NAMES as readonly string[]).includes(name),
      'is the name of a built-in tool',
    ),
  description: z.string().max(1024),
  parameters: z.record(z.string(), z.unknown()),
  url: z.url({ protocol: /^https?$/ }),
  requiresApproval: z.boolean().default(false),
});

/** API.md `mcpServers`: a server the agent takes tools from, over streamable HTTP. */
export const agentMcpServerSchema = z.strictObject({
  // `__` separates the server from the tool in the names offered to the model.
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/, 'must be 1-32 letters, digits, "_" or "-"')
    .refine((name) => !name.includes('__'), 'must not hold "__"'),
  url: z.url({ protocol: /^https?$/ }),
  headersFromEnv: z
    .record(
      z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'must be an HTTP header name'),
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
    )
    .optional(),
  tools: z.array(z.string().min(1).max(128)).max(256).optional(),
  requiresApproval: z.union([z.boolean(), z.array(z.string().min(1).max(128)).max(256)]).optional(),
});

const agentFields = {
  name: z.string().trim().min(1).max(200),
  instructions: z.string().max(100_000),
  model: z.string().min(1),
  effort: z.enum(EFFORT_LEVELS),
  /** Bound skills by slug, in catalogue order. */
  skills: z.array(slugSchema).max(200),
  tools: z
    .array(agentToolSchema)
    .max(64)
    .refine(
      (tools) => new Set(tools.map((t) => t.name)).size === tools.length,
      'tool names must be distinct',
    ),
  mcpServers: z
    .array(agentMcpServerSchema)
    .max(16)
    .refine(
      (servers) => new Set(servers.map((s) => s.name)).size === servers.length,
      'MCP server names must be distinct',
    ),
  compactionGuidance: z.string().max(10_000).nullable(),
  reviewer: z.string().min(1).nullable(),
};

/** An agent as created (API) or declared (bootstrap file); what may be left out gets a default. */
export const agentSchema = z.strictObject({
  id: idSchema,
  name: agentFields.name,
  instructions: agentFields.instructions.default(''),
  model: agentFields.model,
  effort: agentFields.effort.default('medium'),
  skills: agentFields.skills.default([]),
  tools: agentFields.tools.default([]),
  mcpServers: agentFields.mcpServers.default([]),
  compactionGuidance: agentFields.compactionGuidance.default(null),
  reviewer: agentFields.reviewer.default(null),
});
export type AgentSpec = z.output<typeof agentSchema>;

export const agentPatchSchema = z.strictObject(agentFields).partial();
export type AgentPatch = z.output<typeof agentPatchSchema>;

/** An agent as the API shows it: every field, defaults filled in. */
export type AgentView = z.output<typeof agentSchema>;
