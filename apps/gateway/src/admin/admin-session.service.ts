import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import IORedis from 'ioredis';
import { UserRepository, type User } from '@portal/dal';
import { DomainError } from '@portal/domain';
import { BEARER } from '../common/auth.guard';
import type { Principal } from '../common/principal.types';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';

/** The dashboard's session cookie: sent by the browser to the dashboard's paths only. */
export const ADMIN_COOKIE = 'portal_admin_session';
export const ADMIN_SESSION_TTL_MS = 30 * 60 * 1000;

/**
 * Who may open the queue dashboard (`/admin/queues`): an admin, by API key (`Authorization: Bearer`)
 * or, for a browser, which cannot add that header to the dashboard's pages and assets, by a
 * session cookie from `POST /v1/admin/session`. A session is a random token; Redis keeps its hash
 * and the user for 30 minutes, so every gateway replica accepts it and no new secret is needed.
 * The user's role is read again on every request. The queues hold every org's jobs, so only admins
 * of the operator orgs (PORTAL_OPERATOR_ORGS) are let in.
 */
@Injectable()
export class AdminSessionService implements OnApplicationShutdown {
  private readonly redis: IORedis;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(UserRepository) private readonly users: UserRepository,
  ) {
    this.redis = new IORedis(config.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
  }

  async open(admin: Principal): Promise<{ token: string; expiresAt: Date }> {
    const token = randomBytes(32).toString('base64url');
    const session = JSON.stringify({ orgId: admin.orgId, userId: admin.userId });
    await this.redis.set(this.key(token), session, 'PX', ADMIN_SESSION_TTL_MS);
    return { token, expiresAt: new Date(Date.now() + ADMIN_SESSION_TTL_MS) };
  }

  /** The admin behind a dashboard request; `unauthorized` without a valid key or session, else `forbidden`. */
  async authenticate(headers: { authorization?: string; cookie?: string }): Promise<Principal> {
    const apiKey = BEARER.exec(headers.authorization ?? '')?.[1];
    const token = readCookie(headers.cookie, ADMIN_COOKIE);
    let user: User | null = null;
    if (apiKey) user = await this.users.findByApiKey(apiKey);
    else if (token) {
      const session = await this.redis.get(this.key(token));
      const { orgId, userId } = session ? (JSON.parse(session) as Principal) : ({} as Partial<Principal>);
      if (orgId && userId) user = await this.users.get(orgId, userId);
    }
    if (!user) {
      throw new DomainError(
        'unauthorized',
        'The queue dashboard needs an admin: Authorization: Bearer <apiKey>, or a session from POST /v1/admin/session',
      );
    }
    if (user.role !== 'admin')
      throw new DomainError('forbidden', `Role ${user.role} may not see the queues; it needs admin`);
    if (!this.config.operatorOrgs.includes(user.orgId))
      throw new DomainError(
        'forbidden',
        "The queues hold every org's jobs: only admins of PORTAL_OPERATOR_ORGS see them",
      );
    return { userId: user.id, orgId: user.orgId, role: user.role };
  }

  async onApplicationShutdown(): Promise<void> {
    this.redis.disconnect();
  }

  private key(token: string): string {
    return `${this.config.prefix}:admin-session:${createHash('sha256').update(token).digest('hex')}`;
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
