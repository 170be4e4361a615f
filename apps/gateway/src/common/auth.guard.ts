import { Inject, Injectable, Optional, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashApiKey, UserRepository, type User, type UserRole } from '@portal/dal';
import { DomainError } from '@portal/domain';
import { addLogContext } from '@portal/queue';
import { PUBLIC_KEY, ROLES_KEY } from './auth.decorator';
import { RateLimiter } from './rate-limit';

export const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * How long a found key's user is remembered (by the key's hash), so a busy client costs no query
 * per request. Keys and roles change only when the bootstrap file is applied at boot; a key
 * removed from the database by hand stops working within this time.
 */
export const KNOWN_KEY_TTL_MS = 5_000;
const KNOWN_KEYS_MAX = 10_000;

/**
 * `Authorization: Bearer <apiKey>` → the request's principal. The key is hashed and looked up by
 * its hash (an indexed equality in Postgres), so no secret is compared here byte by byte.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly known = new Map<string, { user: User; until: number }>();

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
    const user = apiKey ? await this.userOf(apiKey) : null;
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

  /** Unknown keys are never remembered: each costs its lookup. */
  private async userOf(apiKey: string): Promise<User | null> {
    const hash = hashApiKey(apiKey);
    const known = this.known.get(hash);
    if (known && known.until > Date.now()) return known.user;
    const user = await this.users.findByApiKey(apiKey);
    if (this.known.size >= KNOWN_KEYS_MAX) this.known.clear();
    if (user) this.known.set(hash, { user, until: Date.now() + KNOWN_KEY_TTL_MS });
    else this.known.delete(hash);
    return user;
  }
}
