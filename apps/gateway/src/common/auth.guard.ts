import { Inject, Injectable, Optional, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { UserRepository, type UserRole } from '@portal/dal';
import { DomainError } from '@portal/domain';
import { addLogContext } from '@portal/queue';
import { PUBLIC_KEY, ROLES_KEY } from './auth.decorator';
import { RateLimiter } from './rate-limit';

export const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * `Authorization: Bearer <apiKey>` → the request's principal. The key is hashed and looked up by
 * its hash (an indexed equality in Postgres), so no secret is compared here byte by byte.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(UserRepository) private readonly users: UserRepository,
    @Optional() @Inject(RateLimiter) private readonly rateLimit?: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;

    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const apiKey = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const user = apiKey ? await this.users.findByApiKey(apiKey) : null;
    if (!user)
      throw new DomainError('unauthorized', 'A valid API key is needed: Authorization: Bearer <apiKey>');
    // Per key, before the role check: a key past its window gets 429 on every route it calls.
    await this.rateLimit?.enforce(apiKey!, context.switchToHttp().getResponse<FastifyReply>());
    request.principal = { userId: user.id, orgId: user.orgId, role: user.role };
    addLogContext({ orgId: user.orgId, userId: user.id });

    const roles = this.reflector.getAllAndOverride<UserRole[] | undefined>(ROLES_KEY, targets);
    if (roles && !roles.includes(user.role)) {
      throw new DomainError('forbidden', `Role ${user.role} may not do this; it needs ${roles.join(' or ')}`);
    }
    return true;
  }
}
