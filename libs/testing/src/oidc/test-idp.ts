import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ClientMetadata } from 'oidc-provider';

/** The signing key of the provider, as a private key for re-signing and a public JWK for its JWKS. */
interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

function newKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = randomUUID();
  return { kid, privateKey, jwk: { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** An RS256 JWT over `payload`, signed by `key` (for tokens the test changes after the provider issued them). */
export function signJwt(payload: Record<string, unknown>, key: SigningKey): string {
  const input = `${b64({ alg: 'RS256', typ: 'JWT', kid: key.kid })}.${b64(payload)}`;
  return `${input}.${createSign('RSA-SHA256').update(input).sign(key.privateKey).toString('base64url')}`;
}

export interface TestIdpAccount {
  sub: string;
  claims?: Record<string, unknown>;
}

/** What a test does to the ID token the token endpoint returns: re-sign a changed payload. */
export type IdTokenTamper = (
  payload: Record<string, unknown>,
  keys: { provider: SigningKey; stranger: SigningKey },
) => string;

export interface TestIdp {
  /** `http://127.0.0.1:<port>`: discovery at `/.well-known/openid-configuration`. */
  issuer: string;
  /** Registers a client (a redirect URI is known once the portal listens). */
  addClient(client: { clientId: string; clientSecret?: string; redirectUris: string[] }): void;
  /** Who the next sign-ins are, until changed: the provider logs them in without a form. */
  signInAs(account: TestIdpAccount): void;
  /** Changes the next ID tokens the token endpoint answers with; null stops. */
  tamper(fn: IdTokenTamper | null): void;
  /** A new signing key, published first in the JWKS and used from now on (the old one stays listed). */
  rotateKeys(): void;
  close(): Promise<void>;
}

/**
 * A real OpenID provider (`oidc-provider`) on a free 127.0.0.1 port with its own RSA keys: the
 * authorization code flow with PKCE, discovery and JWKS as any provider serves them. Its login
 * and consent are answered at once for the account of `signInAs`, so tests (and a browser) go
 * through the whole redirect dance without a form. The provider is built when the first client is
 * added, and rebuilt on each change of clients or keys.
 */
export async function startTestIdp(): Promise<TestIdp> {
  const clients: ClientMetadata[] = [];
  let keys = [newKey()];
  const stranger = newKey();
  let account: TestIdpAccount = { sub: 'someone' };
  let tamper: IdTokenTamper | null = null;
  let provider: Provider | null = null;

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!provider) {
      res.writeHead(503).end('no client registered yet');
      return;
    }
    if (req.url?.startsWith('/interaction/')) {
      // Login and consent at once, for the account of signInAs.
      const details = await provider.interactionDetails(req, res);
      const grant = new provider.Grant({
        accountId: account.sub,
        clientId: String(details.params.client_id),
      });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, {
        login: { accountId: account.sub },
        consent: { grantId },
      });
      return;
    }
    provider.callback()(req, res);
  }

  function build(): void {
    const built = new Provider(issuer, {
      clients,
      jwks: { keys: keys.map((k) => k.jwk) as never },
      cookies: { keys: ['test-idp-cookies'] },
      findAccount: (_ctx, sub) => ({
        accountId: sub,
        claims: () => ({ sub, ...(sub === account.sub ? account.claims : {}) }),
      }),
      claims: { openid: ['sub'], profile: ['name', 'portal_role', 'role'], email: ['email'] },
      // The role claim is read from the ID token, as providers configured with a role mapper send it.
      conformIdTokenClaims: false,
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      features: { devInteractions: { enabled: false } },
      pkce: { required: () => true },
      ttl: {
        AccessToken: 600,
        AuthorizationCode: 60,
        IdToken: 600,
        Interaction: 600,
        Session: 600,
        Grant: 600,
      },
    });
    built.use(async (ctx, next) => {
      await next();
      const body = ctx.body as { id_token?: string } | undefined;
      if (ctx.path === '/token' && tamper && body?.id_token) {
        const payload = JSON.parse(Buffer.from(body.id_token.split('.')[1], 'base64url').toString());
        ctx.body = { ...body, id_token: tamper(payload, { provider: keys[0], stranger }) };
      }
    });
    provider = built;
  }

  return {
    issuer,
    addClient({ clientId, clientSecret, redirectUris }) {
      clients.push({
        client_id: clientId,
        ...(clientSecret ? { client_secret: clientSecret } : { token_endpoint_auth_method: 'none' }),
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
      });
      build();
    },
    signInAs(next) {
      account = next;
    },
    tamper(fn) {
      tamper = fn;
    },
    rotateKeys() {
      keys = [newKey(), ...keys];
      build();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The `name=value` of cookie `name` set by `res`, or null. */
export function setCookie(res: Response, name: string): string | null {
  const set = res.headers.getSetCookie().find((c) => c.startsWith(`${name}=`));
  return set ? set.split(';')[0] : null;
}

/**
 * What a browser does from the portal's login to its callback: the login's redirect, the
 * provider's redirects (with the provider's own cookies), up to the portal's callback URL, which
 * is returned unvisited with the portal's sign-in cookie.
 */
export async function followSignIn(
  portalUrl: string,
  orgId: string,
): Promise<{ callback: string; signIn: string }> {
  const login = await fetch(`${portalUrl}/v1/auth/oidc/${orgId}/login`, { redirect: 'manual' });
  const signIn = setCookie(login, 'portal_sign_in');
  if (login.status !== 302 || !signIn)
    throw new Error(`login answered ${login.status}: ${await login.text()}`);
  const jar = new Map<string, string>();
  let next = login.headers.get('location')!;
  while (!next.startsWith(portalUrl)) {
    const res = await fetch(next, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      jar.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
    }
    const location = res.headers.get('location');
    if (!location) throw new Error(`the provider answered ${res.status}: ${await res.text()}`);
    next = new URL(location, next).href;
  }
  return { callback: next, signIn };
}
