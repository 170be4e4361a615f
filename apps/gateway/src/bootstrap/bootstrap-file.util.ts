import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Env } from '@portal/contracts';
import type { ModelEntry } from '@portal/model';
import { agentProblems } from '../agents/agent-rules.util';
import { oidcProviders, oidcSchema } from '../auth/oidc-config';
import { agentSchema, idSchema, skillSchema } from '@portal/contracts';

export const API_KEY_PATTERN = /^pk_[A-Za-z0-9._-]{4,}$/;

/** A fresh `pk_…` key: 192 random bits. */
export function newApiKey(): string {
  return `pk_${randomBytes(24).toString('base64url')}`;
}

const userSchema = z.strictObject({
  id: idSchema,
  role: z.enum(['member', 'author', 'admin']),
  apiKey: z.string().regex(API_KEY_PATTERN, 'must look like pk_… (letters, digits, ".", "_", "-")'),
});

const fileSkillSchema = skillSchema.extend({ owner: idSchema.nullable().default(null) });

const orgSchema = z.strictObject({
  id: idSchema,
  name: z.string().trim().min(1).optional(),
  users: z.array(userSchema).default([]),
  skills: z.array(fileSkillSchema).default([]),
  agents: z.array(agentSchema).default([]),
  oidc: oidcSchema.optional(),
});

/** API.md "Bootstrap file". */
export const bootstrapFileSchema = z.strictObject({
  /** Read for the prompt by `readPortalFloor` (@portal/application); validated here with the rest. */
  portalFloor: z
    .string()
    .refine((s) => s.trim() !== '', 'must be non-empty text')
    .nullish(),
  orgs: z.array(orgSchema).min(1),
});
export type BootstrapFile = z.output<typeof bootstrapFileSchema>;

export class BootstrapError extends Error {
  override name = 'BootstrapError';
}

function fieldName(path: readonly PropertyKey[]): string {
  return path
    .map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`))
    .join('');
}

/** Reads, parses and validates the file; every problem is listed, each naming the file and field. */
export function readBootstrapFile(
  file: string,
  rules: { catalogue: readonly ModelEntry[]; toolUrlAllow: readonly string[]; env?: Env },
): BootstrapFile {
  const fail = (problems: string[]): never => {
    throw new BootstrapError(`PORTAL_BOOTSTRAP_FILE ${file}:\n  - ${problems.join('\n  - ')}`);
  };
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    return fail([`cannot read it (${(err as Error).message})`]);
  }
  let doc: unknown;
  try {
    doc = /^\s*[[{]/.test(content) ? JSON.parse(content) : parseYaml(content);
  } catch (err) {
    return fail([`not valid JSON or YAML (${(err as Error).message})`]);
  }

  const parsed = bootstrapFileSchema.safeParse(doc);
  if (!parsed.success) {
    return fail(
      parsed.error.issues.map((issue) => {
        const keys = issue.code === 'unrecognized_keys' ? ` (${issue.keys.join(', ')})` : '';
        return `${fieldName(issue.path) || '(top level)'}${keys}: ${issue.message}`;
      }),
    );
  }
  const problems = [
    ...crossCheck(parsed.data, rules),
    ...oidcProviders(parsed.data.orgs, rules.env ?? {}).problems,
  ];
  if (problems.length) fail(problems);
  return parsed.data;
}

/** What the schema alone cannot see: duplicates, owners, skills by slug, models and tool URLs. */
function crossCheck(
  doc: BootstrapFile,
  rules: { catalogue: readonly ModelEntry[]; toolUrlAllow: readonly string[] },
): string[] {
  const problems: string[] = [];
  const apiKeys = new Map<string, string>();
  const twice = (at: string, what: string, value: string) =>
    problems.push(`${at}: ${what} "${value}" is listed twice`);
  const orgIds = new Set<string>();

  doc.orgs.forEach((org, o) => {
    const at = `orgs[${o}]`;
    if (orgIds.has(org.id)) twice(`${at}.id`, 'org', org.id);
    orgIds.add(org.id);

    const userIds = new Set<string>();
    org.users.forEach((user, u) => {
      if (userIds.has(user.id)) twice(`${at}.users[${u}].id`, 'user', user.id);
      userIds.add(user.id);
      const holder = apiKeys.get(user.apiKey);
      if (holder) problems.push(`${at}.users[${u}].apiKey: the same key is given to ${holder}`);
      apiKeys.set(user.apiKey, `${org.id}/${user.id}`);
    });

    const slugs = new Set<string>();
    org.skills.forEach((skill, s) => {
      const field = `${at}.skills[${s}] (${skill.slug})`;
      if (slugs.has(skill.slug)) twice(`${field}.slug`, 'skill', skill.slug);
      slugs.add(skill.slug);
      if (skill.owner !== null && !userIds.has(skill.owner)) {
        problems.push(`${field}.owner: "${skill.owner}" is not a user of org ${org.id}`);
      }
      if (skill.visibility === 'private' && skill.owner === null) {
        problems.push(`${field}.owner: a private skill needs an owner`);
      }
    });

    const agentIds = new Set<string>();
    org.agents.forEach((agent, a) => {
      const field = `${at}.agents[${a}] (${agent.id})`;
      if (agentIds.has(agent.id)) twice(`${field}.id`, 'agent', agent.id);
      agentIds.add(agent.id);
      agent.skills.forEach((slug, k) => {
        if (!slugs.has(slug)) problems.push(`${field}.skills[${k}]: no skill "${slug}" in org ${org.id}`);
      });
      for (const p of agentProblems(agent, rules)) problems.push(`${field}.${p.field}: ${p.message}`);
    });
  });
  return problems;
}
