import type { OrgId, UserId } from '@portal/domain';
import type { UserRole } from '@portal/dal';

/** Who is calling: set by the auth guard from the API key or the browser session. */
export interface Principal {
  userId: UserId;
  orgId: OrgId;
  role: UserRole;
  /** How the caller signed in: an API key, or a session from the org's identity provider. */
  via: 'apiKey' | 'oidc';
  /** The person's name from the identity provider (sessions only, when it sent one). */
  name?: string;
  /** The session's CSRF token (sessions only). */
  csrf?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}
