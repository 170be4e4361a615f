import type { OrgId, UserId } from '@portal/domain';
import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { User } from '@portal/dal';
import { RedisConnections, type RedisClient } from '@portal/redis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { isLoopback } from './oidc-config';

/** The browser session's cookie (API.md "Signing in from a browser"). */
export const SESSION_COOKIE = 'portal_session';
/** The header a state-changing request made with the cookie carries: the session's CSRF token. */
export const CSRF_HEADER = 'x-portal-csrf';

export interface Session {
  orgId: OrgId;
  userId: UserId;
  /** The token `X-Portal-CSRF` must match (given by `GET /v1/me`). */
  csrf: string;
  /** The person's name from the ID token, when it had one. */
  name: string | null;
}

/**
 * Browser sessions in Redis, so every gateway replica accepts them. The cookie holds a random
 * token; Redis keeps the session under its hash, and each use pushes the expiry SESSION_TTL
 * further (idle expiry). The user is not trusted from here: the caller reads them again.
 */
@Injectable()
export class SessionService {
  private readonly redis: RedisClient;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(RedisConnections) redis: RedisConnections,
  ) {
    this.redis = redis.shared('state');
  }

  /** A new session for `user`; returns the cookie's token. */
  async open(user: User, name: string | null): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const session: Session = {
      orgId: user.orgId,
      userId: user.id,
      csrf: randomBytes(24).toString('base64url'),
      name,
    };
    await this.redis.set(this.key(token), JSON.stringify(session), 'PX', this.config.sessionTtlMs);
    return token;
  }

  /** The session, its idle expiry pushed back; null when unknown or expired. */
  async read(token: string): Promise<Session | null> {
    const stored = await this.redis.getex(this.key(token), 'PX', this.config.sessionTtlMs);
    return stored ? (JSON.parse(stored) as Session) : null;
  }

  async end(token: string): Promise<void> {
    await this.redis.del(this.key(token));
  }

  private key(token: string): string {
    return `${this.config.prefix}:session:${createHash('sha256').update(token).digest('hex')}`;
  }
}

/** The value of cookie `name` in a Cookie header, or null. */
export function readCookie(header: string | undefined, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=') || null;
  }
  return null;
}

/**
 * A `Set-Cookie` value: HttpOnly, SameSite=Lax (the provider's redirect back is a top-level GET
 * from another site), Secure unless the portal is reached on localhost. `maxAgeS` 0 deletes it.
 */
export function cookie(
  name: string,
  value: string,
  opts: { path: string; secure: boolean; maxAgeS?: number },
): string {
  return [
    `${name}=${value}`,
    `Path=${opts.path}`,
    ...(opts.maxAgeS !== undefined ? [`Max-Age=${opts.maxAgeS}`] : []),
    'HttpOnly',
    'SameSite=Lax',
    ...(opts.secure ? ['Secure'] : []),
  ].join('; ');
}

/** The portal's origin as the browser reached it (behind a proxy, from X-Forwarded-Proto). */
export function originOf(request: {
  protocol: string;
  headers: { host?: string; [name: string]: string | string[] | undefined };
}): { origin: string; secure: boolean } {
  const proto = String(request.headers['x-forwarded-proto'] ?? request.protocol)
    .split(',')[0]
    .trim();
  const host = request.headers.host ?? 'localhost';
  // The cookie is Secure everywhere but on localhost, where the portal is served over plain HTTP.
  return { origin: `${proto}://${host}`, secure: !isLoopback(new URL(`http://${host}`).hostname) };
}
