import { createParamDecorator, SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { UserRole } from '@portal/dal';
import type { Principal } from './principal.types';

export const PUBLIC_KEY = 'portal:public';
export const ROLES_KEY = 'portal:roles';

/** The route needs no API key (health, metrics). */
export const Public = () => SetMetadata(PUBLIC_KEY, true);

/** Only these roles may call the route; others get 403 `forbidden`. */
export const Roles = (...roles: UserRole[]) => SetMetadata(ROLES_KEY, roles);

/** Authors and admins create and change agents and skills and read prompt previews. */
export const AuthorsOnly = () => Roles('author', 'admin');

/** The authenticated caller (the guard has run). */
export const Caller = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = ctx.switchToHttp().getRequest<FastifyRequest>().principal;
  if (!principal) throw new Error('Caller used on a public route');
  return principal;
});
