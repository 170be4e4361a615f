import type { UserRole } from '@portal/dal';

/** Who is calling: set by the auth guard from the API key. */
export interface Principal {
  userId: string;
  orgId: string;
  role: UserRole;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}
