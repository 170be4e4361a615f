import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import * as oidc from 'openid-client';
import { UserRepository, type User } from '@portal/dal';
import { DomainError, type OrgId } from '@portal/domain';
import { RedisConnections, type RedisClient } from '@portal/redis';
import { GATEWAY_CONFIG, type GatewayConfig } from '../config';
import { isLoopback, roleOf, type OidcProvider } from './oidc-config';

/** The cookie that ties a sign-in's callback to the browser that started it. */
export const SIGN_IN_COOKIE = 'portal_sign_in';
export const SIGN_IN_TTL_MS = 10 * 60_000;
const SCOPE = 'openid profile email';

/** What the login leaves for its callback, in Redis under the sign-in cookie's hash. */
interface PendingSignIn {
  orgId: OrgId;
  state: string;
  nonce: string;
  verifier: string;
  redirectUri: string;
}

export interface ProviderView {
  orgId: OrgId;
  name: string;
  loginUrl: string;
}

export const loginPath = (orgId: OrgId) => `/v1/auth/oidc/${encodeURIComponent(orgId)}/login`;
export const callbackPath = (orgId: OrgId) => `/v1/auth/oidc/${encodeURIComponent(orgId)}/callback`;

/**
 * The authorization code flow with PKCE, `state` and `nonce` against each org's provider, through
 * openid-client (a certified relying party): discovery, the token exchange and the ID token's
 * checks (issuer, audience, expiry, and its signature against the provider's JWKS, which the
 * library fetches again when a token names a key it has not seen). Discovery runs on the first
 * sign-in of an org, so a provider that is down does not stop the gateway.
 */
@Injectable()
export class OidcService {
  private readonly logger = new Logger('Oidc');
  private readonly redis: RedisClient;
  private providers = new Map<string, OidcProvider>();
  private readonly configurations = new Map<string, Promise<oidc.Configuration>>();

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    @Inject(UserRepository) private readonly users: UserRepository,
    @Inject(RedisConnections) redis: RedisConnections,
  ) {
    this.redis = redis.shared('state');
  }

  /** The orgs' providers, from the bootstrap file. */
  use(providers: readonly OidcProvider[]): void {
    this.providers = new Map(providers.map((p) => [p.orgId, p]));
    this.configurations.clear();
  }

  list(): ProviderView[] {
    return [...this.providers.values()].map((p) => ({
      orgId: p.orgId,
      name: p.name,
      loginUrl: loginPath(p.orgId),
    }));
  }

  /** Where to send the browser, and the sign-in cookie's value. `origin` is the portal's, as the browser sees it. */
  async login(orgId: OrgId, origin: string): Promise<{ location: string; signIn: string }> {
    const configuration = await this.configuration(this.provider(orgId));
    const pending: PendingSignIn = {
      orgId,
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      verifier: oidc.randomPKCECodeVerifier(),
      redirectUri: origin + callbackPath(orgId),
    };
    const signIn = randomBytes(32).toString('base64url');
    await this.redis.set(this.key(signIn), JSON.stringify(pending), 'PX', SIGN_IN_TTL_MS);
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: pending.redirectUri,
      scope: SCOPE,
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: 'S256',
      state: pending.state,
      nonce: pending.nonce,
    });
    return { location: url.href, signIn };
  }

  /**
   * The provider's redirect back: the pending sign-in is taken once (a replayed callback finds
   * none), must be this org's, and the code is exchanged and its ID token checked. The user is
   * found or created by the token's `sub` in this org.
   */
  async callback(
    orgId: OrgId,
    signIn: string | null,
    query: string,
  ): Promise<{ user: User; name: string | null }> {
    const provider = this.provider(orgId);
    const stored = signIn ? await this.redis.getdel(this.key(signIn)) : null;
    const pending = stored ? (JSON.parse(stored) as PendingSignIn) : null;
    if (!pending || pending.orgId !== orgId) {
      throw new DomainError(
        'unauthorized',
        'This sign-in was not started from this browser for this org, or is over: sign in again',
      );
    }
    let claims: oidc.IDToken;
    try {
      const tokens = await oidc.authorizationCodeGrant(
        await this.configuration(provider),
        new URL(`${pending.redirectUri}${query}`),
        {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          expectedNonce: pending.nonce,
          idTokenExpected: true,
        },
        { redirect_uri: pending.redirectUri },
      );
      claims = tokens.claims()!;
    } catch (err) {
      this.logger.warn(`sign-in to org ${orgId} refused: ${(err as Error).message}`);
      throw new DomainError(
        'unauthorized',
        `The identity provider's answer was refused: ${(err as Error).message}`,
      );
    }
    const role = provider.roleClaim ? roleOf(claims[provider.roleClaim]) : null;
    const user = await this.users.signIn(orgId, claims.sub, role, provider.defaultRole);
    if (!user) throw new DomainError('forbidden', 'This user was removed from the portal');
    const name = [claims['name'], claims['preferred_username'], claims['email']].find(
      (v) => typeof v === 'string',
    );
    return { user, name: (name as string | undefined) ?? null };
  }

  private provider(orgId: OrgId): OidcProvider {
    const provider = this.providers.get(orgId);
    if (!provider) throw new DomainError('not_found', `Org ${orgId} has no identity provider`);
    return provider;
  }

  /** Discovery, once per org (again after a failure). Plain HTTP is allowed for a provider on localhost only. */
  private configuration(provider: OidcProvider): Promise<oidc.Configuration> {
    let configuration = this.configurations.get(provider.orgId);
    if (!configuration) {
      const issuer = new URL(provider.issuer);
      configuration = oidc
        .discovery(
          issuer,
          provider.clientId,
          undefined,
          provider.clientSecret ? oidc.ClientSecretBasic(provider.clientSecret) : oidc.None(),
          {
            execute:
              issuer.protocol === 'http:' && isLoopback(issuer.hostname) ? [oidc.allowInsecureRequests] : [],
          },
        )
        .then((discovered) => {
          // Without it openid-client trusts the TLS channel for the ID token; the issue asks for its signature.
          oidc.enableNonRepudiationChecks(discovered);
          return discovered;
        });
      configuration.catch(() => this.configurations.delete(provider.orgId));
      this.configurations.set(provider.orgId, configuration);
    }
    return configuration.catch((err: Error) => {
      throw new DomainError(
        'unavailable',
        `The identity provider of org ${provider.orgId} did not answer: ${err.message}`,
      );
    });
  }

  private key(signIn: string): string {
    return `${this.config.prefix}:sign-in:${createHash('sha256').update(signIn).digest('hex')}`;
  }
}
