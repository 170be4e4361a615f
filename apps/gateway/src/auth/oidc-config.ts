import { OrgId } from '@portal/domain';
import { z } from 'zod';
import type { Env } from '@portal/contracts';
import type { UserRole } from '@portal/dal';

const ROLES = ['member', 'author', 'admin'] as const;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** True for `localhost`, `127.0.0.1` and `[::1]` (URL hostnames): the only hosts plain HTTP is allowed on. */
export function isLoopback(hostname: string): boolean {
  return LOOPBACK.has(hostname);
}

/** An org's identity provider in the bootstrap file (API.md "Signing in from a browser"). */
export const oidcSchema = z.strictObject({
  issuer: z.url().refine((value) => {
    const url = new URL(value);
    return url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname));
  }, 'must be an https URL (plain http only for a provider on localhost)'),
  clientId: z.string().min(1),
  clientSecretEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable')
    .optional(),
  roleClaim: z.string().min(1).optional(),
  defaultRole: z.enum(ROLES).default('member'),
});

/** An org's provider as the gateway uses it: the secret read from its env var. */
export interface OidcProvider {
  orgId: OrgId;
  /** What the sign-in button names: the org's name. */
  name: string;
  issuer: string;
  clientId: string;
  clientSecret: string | null;
  roleClaim: string | null;
  defaultRole: UserRole;
}

/** The role a claim value names, or null for a missing or unknown one. */
export function roleOf(value: unknown): UserRole | null {
  return (ROLES as readonly unknown[]).includes(value) ? (value as UserRole) : null;
}

/**
 * The providers of the file's orgs, and the problems of their secrets: a named variable that is
 * unset or empty stops the boot like any other mistake in the file.
 */
export function oidcProviders(
  orgs: readonly { id: string; name?: string; oidc?: z.output<typeof oidcSchema> }[],
  env: Env,
): { providers: OidcProvider[]; problems: string[] } {
  const providers: OidcProvider[] = [];
  const problems: string[] = [];
  orgs.forEach((org, o) => {
    if (!org.oidc) return;
    const { issuer, clientId, clientSecretEnv, roleClaim, defaultRole } = org.oidc;
    const secret = clientSecretEnv ? env[clientSecretEnv] : undefined;
    if (clientSecretEnv && !secret)
      problems.push(`orgs[${o}].oidc.clientSecretEnv: ${clientSecretEnv} is not set`);
    providers.push({
      orgId: OrgId(org.id),
      name: org.name ?? org.id,
      issuer,
      clientId,
      clientSecret: secret || null,
      roleClaim: roleClaim ?? null,
      defaultRole,
    });
  });
  return { providers, problems };
}
