import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { hashApiKey, UserRepository, type User } from '@portal/dal';
import { DomainError } from '@portal/domain';
import type { Principal } from '../common/principal.types';
import { CSRF_HEADER, originOf, readCookie, SESSION_COOKIE, SessionService } from './session.service';

export const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * How long a found key's user is remembered (by the key's hash), so a busy client costs no query
 * per request. Keys and roles change only when the bootstrap file is applied at boot; a key
 * removed from the database by hand stops working within this time.
 */
export const KNOWN_KEY_TTL_MS = 5_000;
const KNOWN_KEYS_MAX = 10_000;

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface AuthRequest {
  method: string;
  protocol: string;
  headers: { authorization?: string; cookie?: string; [name: string]: string | string[] | undefined };
}

const sameText = (a: string, b: string) => {
  const [x, y] = [a, b].map((s) => createHash('sha256').update(s).digest());
  return timingSafeEqual(x, y);
};

/**
 * Who is calling, in one place for the API and the queue dashboard: `Authorization: Bearer
 * <apiKey>` (tools), else the browser session cookie. The key is hashed and looked up by its hash
 * (an indexed equality in Postgres), so no secret is compared byte by byte. A session's user is
 * read again on every request, so a removed user is refused at once; a state-changing request
 * made with the cookie must carry the session's CSRF token, as a cookie rides along with any page's
 * request.
 */
@Injectable()
export class Authenticator {
  private readonly known = new Map<string, { user: User; until: number }>();

  constructor(
    @Inject(UserRepository) private readonly users: UserRepository,
    @Inject(SessionService) private readonly sessions: SessionService,
  ) {}

  /**
   * `unauthorized` without a valid key or session; `csrf` when the cookie's request lacks the
   * token. `sameOriginIsEnough`: for pages that cannot add the header (the queue dashboard's own
   * scripts), an `Origin` of the portal itself proves the request came from its pages.
   */
  async authenticate(
    request: AuthRequest,
    { sameOriginIsEnough = false } = {},
  ): Promise<{ principal: Principal; apiKey: string | null }> {
    const apiKey = BEARER.exec(request.headers.authorization ?? '')?.[1] ?? null;
    const user = apiKey ? await this.userOf(apiKey) : null;
    const principal = apiKey
      ? user && { userId: user.id, orgId: user.orgId, role: user.role, via: 'apiKey' as const }
      : await this.fromSession(request, sameOriginIsEnough);
    if (!principal) {
      throw new DomainError(
        'unauthorized',
        'A valid API key (Authorization: Bearer <apiKey>) or a browser session is needed',
      );
    }
    return { principal, apiKey };
  }

  /** The session cookie's user, read again (a session of a removed user ends here). */
  private async fromSession(request: AuthRequest, sameOriginIsEnough: boolean): Promise<Principal | null> {
    const token = readCookie(request.headers.cookie, SESSION_COOKIE);
    const session = token ? await this.sessions.read(token) : null;
    if (!token || !session) return null;
    const user = await this.users.get(session.orgId, session.userId);
    if (!user) {
      await this.sessions.end(token);
      return null;
    }
    const sent = request.headers[CSRF_HEADER];
    const proven =
      (typeof sent === 'string' && sameText(sent, session.csrf)) ||
      (sameOriginIsEnough && request.headers.origin === originOf(request).origin);
    if (!SAFE_METHODS.has(request.method) && !proven) {
      throw new DomainError(
        'csrf',
        'A request made with the session cookie must carry the header X-Portal-CSRF',
      );
    }
    return {
      userId: user.id,
      orgId: user.orgId,
      role: user.role,
      via: 'oidc',
      csrf: session.csrf,
      ...(session.name && { name: session.name }),
    };
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
