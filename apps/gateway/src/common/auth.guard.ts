import { Inject, Injectable, Optional, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserRole } from '@portal/dal';
import { DomainError } from '@portal/domain';
import { addLogContext } from '@portal/observability';
import { Authenticator } from '../auth/authenticator.service';
import { PUBLIC_KEY, ROLES_KEY } from './auth.decorator';
import { RateLimiter } from './rate-limit';

/** The request's principal (Authenticator), the per-key rate limit and the route's roles. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(Reflector) private readonly reflector: Reflector,
    @Inject(Authenticator) private readonly auth: Authenticator,
    @Optional() @Inject(RateLimiter) private readonly rateLimit?: RateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_KEY, targets)) return true;

    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const { principal, apiKey } = await this.auth.authenticate(request);
    // Per key, before the role check: a key past its window gets 429 on every route it calls.
    if (apiKey) await this.rateLimit?.enforce(apiKey, context.switchToHttp().getResponse<FastifyReply>());
    request.principal = principal;
    // On the request's lines from here on, and on its own line.
    addLogContext({ orgId: principal.orgId, userId: principal.userId });

    const roles = this.reflector.getAllAndOverride<UserRole[] | undefined>(ROLES_KEY, targets);
    if (roles && !roles.includes(principal.role)) {
      throw new DomainError(
        'forbidden',
        `Role ${principal.role} may not do this; it needs ${roles.join(' or ')}`,
      );
    }
    return true;
  }
}
