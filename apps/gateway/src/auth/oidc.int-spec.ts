import { request, type IncomingMessage } from 'node:http';
import { followSignIn, setCookie, signJwt, startTestIdp, type TestIdp } from '@portal/testing/oidc';
import { readConfig } from '../config';
import { BootstrapService } from '../bootstrap/bootstrap.service';
import {
  STANDARD_BOOTSTRAP,
  startGateway,
  tempFile,
  testEnv,
  type Harness,
} from '../../test/gateway-harness.util';

let acmeIdp: TestIdp;
let globexIdp: TestIdp;
let gw: Harness;

const bootstrap = () => {
  const doc = structuredClone(STANDARD_BOOTSTRAP) as any;
  doc.orgs[0].name = 'Acme';
  doc.orgs[0].oidc = {
    issuer: acmeIdp.issuer,
    clientId: 'portal',
    clientSecretEnv: 'ACME_OIDC_SECRET',
    roleClaim: 'portal_role',
    defaultRole: 'member',
  };
  doc.orgs[1].oidc = { issuer: globexIdp.issuer, clientId: 'portal-globex' };
  return doc;
};

beforeAll(async () => {
  [acmeIdp, globexIdp] = await Promise.all([startTestIdp(), startTestIdp()]);
  gw = await startGateway({ bootstrap: bootstrap(), env: { ACME_OIDC_SECRET: 'acme-s3cret' } });
  acmeIdp.addClient({
    clientId: 'portal',
    clientSecret: 'acme-s3cret',
    redirectUris: [`${gw.url}/v1/auth/oidc/acme/callback`],
  });
  globexIdp.addClient({
    clientId: 'portal-globex',
    redirectUris: [`${gw.url}/v1/auth/oidc/globex/callback`],
  });
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await Promise.all([acmeIdp?.close(), globexIdp?.close()]);
});
afterEach(() => {
  acmeIdp.tamper(null);
  jest.restoreAllMocks();
});

const cookieOf = setCookie;
const startSignIn = (orgId: string) => followSignIn(gw.url, orgId);

const callback = (url: string, signIn: string | null) =>
  fetch(url, { redirect: 'manual', headers: signIn ? { cookie: signIn } : {} });

/** Signs `sub` in to `orgId` and returns the session cookie (`portal_session=…`). */
async function signIn(sub: string, claims: Record<string, unknown> = {}, orgId = 'acme'): Promise<string> {
  (orgId === 'acme' ? acmeIdp : globexIdp).signInAs({ sub, claims });
  const { callback: url, signIn: pending } = await startSignIn(orgId);
  const res = await callback(url, pending);
  expect(res.status).toBe(302);
  return cookieOf(res, 'portal_session')!;
}

const me = (cookie: string) => gw.call('GET', '/v1/me', { as: null, headers: { cookie } });

describe('GET /v1/auth/providers', () => {
  it('lists each org with a provider, its name and login URL, without auth', async () => {
    const res = await gw.call('GET', '/v1/auth/providers', { as: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { orgId: 'acme', name: 'Acme', loginUrl: '/v1/auth/oidc/acme/login' },
      { orgId: 'globex', name: 'globex', loginUrl: '/v1/auth/oidc/globex/login' },
    ]);
    expect((await gw.call('GET', '/v1/auth/oidc/initech/login', { as: null })).status).toBe(404);
  });
});

describe('signing in through the org identity provider', () => {
  it('sends the browser to the provider with PKCE, state and nonce', async () => {
    const login = await fetch(`${gw.url}/v1/auth/oidc/acme/login`, { redirect: 'manual' });
    const to = new URL(login.headers.get('location')!);
    expect(to.origin).toBe(acmeIdp.issuer);
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      client_id: 'portal',
      response_type: 'code',
      redirect_uri: `${gw.url}/v1/auth/oidc/acme/callback`,
      code_challenge_method: 'S256',
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      state: expect.any(String),
      nonce: expect.any(String),
    });
    const pending = login.headers.getSetCookie()[0];
    expect(pending).toMatch(
      /^portal_sign_in=[\w-]+; Path=\/v1\/auth\/oidc\/acme\/callback; Max-Age=600; HttpOnly; SameSite=Lax$/,
    );
  });

  it('marks its cookie Secure and names its https origin when the portal is not on localhost', async () => {
    const { port } = new URL(gw.url);
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      request(
        {
          host: '127.0.0.1',
          port,
          path: '/v1/auth/oidc/acme/login',
          headers: { host: 'portal.example.com', 'x-forwarded-proto': 'https' },
        },
        resolve,
      )
        .on('error', reject)
        .end(),
    );
    res.resume();
    expect(res.statusCode).toBe(302);
    expect(String(res.headers['set-cookie'])).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
    expect(new URL(res.headers.location!).searchParams.get('redirect_uri')).toBe(
      'https://portal.example.com/v1/auth/oidc/acme/callback',
    );
  });

  it('creates the user by sub with the role of the claim, sets the session cookie and redirects to /', async () => {
    acmeIdp.signInAs({ sub: 'ann', claims: { portal_role: 'author', name: 'Ann Lee' } });
    const { callback: url, signIn: pending } = await startSignIn('acme');
    const res = await callback(url, pending);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/');
    const set = res.headers.getSetCookie().find((c) => c.startsWith('portal_session='))!;
    // Secure is off on localhost only.
    expect(set).toMatch(/^portal_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
    const who = await me(set.split(';')[0]);
    expect(who.status).toBe(200);
    expect(who.body).toEqual({
      userId: 'ann',
      orgId: 'acme',
      role: 'author',
      via: 'oidc',
      name: 'Ann Lee',
      csrf: expect.any(String),
    });
    expect((await gw.call('GET', '/v1/me', { as: 'bob' })).body).toEqual({
      userId: 'bob',
      orgId: 'acme',
      role: 'member',
      via: 'apiKey',
    });
  });

  it('takes the default role without the claim, and follows the claim on the next sign-in', async () => {
    expect((await me(await signIn('ben'))).body.role).toBe('member');
    expect((await me(await signIn('ben', { portal_role: 'owner' }))).body.role).toBe('member');
    expect((await me(await signIn('ben', { portal_role: 'admin' }))).body.role).toBe('admin');
    expect((await me(await signIn('ben'))).body.role).toBe('admin');
  });

  it.each([
    ['a wrong audience', (p: any, k: any) => signJwt({ ...p, aud: 'someone-else' }, k.provider)],
    [
      'an expired token',
      (p: any, k: any) => signJwt({ ...p, iat: p.iat - 7200, exp: p.iat - 3600 }, k.provider),
    ],
    ['a bad signature', (p: any, k: any) => signJwt(p, { ...k.stranger, kid: k.provider.kid })],
    ['a missing nonce', (p: any, k: any) => signJwt({ ...p, nonce: undefined }, k.provider)],
    ['another nonce', (p: any, k: any) => signJwt({ ...p, nonce: 'not-this-one' }, k.provider)],
  ])('refuses an ID token with %s, and opens no session', async (_what, tamper) => {
    acmeIdp.signInAs({ sub: 'eve' });
    acmeIdp.tamper(tamper);
    const { callback: url, signIn: pending } = await startSignIn('acme');
    const res = await callback(url, pending);
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe('unauthorized');
    expect(cookieOf(res, 'portal_session')).toBeNull();
    expect(await gw.db.dataSource.query(`SELECT id FROM users WHERE id = 'eve'`)).toEqual([]);
  });

  it('accepts a token the provider re-signed unchanged (the tamper hook itself is sound)', async () => {
    acmeIdp.tamper((p, k) => signJwt(p, k.provider));
    expect((await me(await signIn('fay'))).status).toBe(200);
  });

  it('refuses a replayed callback, and a callback without the browser that started it', async () => {
    acmeIdp.signInAs({ sub: 'gus' });
    const { callback: url, signIn: pending } = await startSignIn('acme');
    expect((await callback(url, pending)).status).toBe(302);
    const replay = await callback(url, pending);
    expect(replay.status).toBe(401);
    expect(cookieOf(replay, 'portal_session')).toBeNull();

    const other = await startSignIn('acme');
    expect((await callback(other.callback, null)).status).toBe(401);
    const forged = new URL(other.callback);
    forged.searchParams.set('state', 'forged');
    expect((await callback(forged.href, other.signIn)).status).toBe(401);
  });

  it("lets no other org's provider sign a user into this org", async () => {
    globexIdp.signInAs({ sub: 'intruder', claims: {} });
    const { callback: url, signIn: pending } = await startSignIn('globex');
    const intoAcme = url.replace('/v1/auth/oidc/globex/', '/v1/auth/oidc/acme/');
    expect((await callback(intoAcme, pending)).status).toBe(401);
    expect(await gw.db.dataSource.query(`SELECT org_id FROM users WHERE id = 'intruder'`)).toEqual([]);

    const session = await signIn('intruder', {}, 'globex');
    expect((await me(session)).body).toMatchObject({ userId: 'intruder', orgId: 'globex', role: 'member' });
  });

  it('follows a key rotation of the provider once the cached keys are a minute old', async () => {
    expect((await me(await signIn('hal'))).status).toBe(200);
    acmeIdp.rotateKeys();
    const now = Date.now();
    jest.spyOn(Date, 'now').mockImplementation(() => now + 61_000);
    expect((await me(await signIn('hal'))).status).toBe(200);
  });
});

describe('the browser session', () => {
  it('needs X-Portal-CSRF with the session token on state-changing requests', async () => {
    const cookie = await signIn('ivy', { portal_role: 'author' });
    const { csrf } = (await me(cookie)).body;
    const create = (headers: Record<string, string>) =>
      gw.call('POST', '/v1/conversations', {
        as: null,
        body: { agentId: 'researcher' },
        headers: { cookie, ...headers },
      });
    const missing = await create({});
    expect(missing.status).toBe(403);
    expect(missing.body.error.code).toBe('csrf');
    expect((await create({ 'x-portal-csrf': 'wrong' })).body.error.code).toBe('csrf');
    expect((await create({ 'x-portal-csrf': csrf })).status).toBe(201);
    expect((await gw.call('GET', '/v1/conversations', { as: null, headers: { cookie } })).status).toBe(200);
  });

  it('streams events and takes uploads with the cookie', async () => {
    const cookie = await signIn('jon');
    const { csrf } = (await me(cookie)).body;
    const conversation = await gw.call('POST', '/v1/conversations', {
      as: null,
      body: { agentId: 'researcher' },
      headers: { cookie, 'x-portal-csrf': csrf },
    });
    const abort = new AbortController();
    const events = await fetch(`${gw.url}/v1/conversations/${conversation.body.id}/events`, {
      headers: { cookie },
      signal: abort.signal,
    });
    expect(events.status).toBe(200);
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    abort.abort();

    const upload = (headers: Record<string, string>) => {
      const form = new FormData();
      form.append('file', new Blob(['Hello, portal.'], { type: 'text/plain' }), 'note.txt');
      return fetch(`${gw.url}/v1/attachments`, {
        method: 'POST',
        body: form,
        headers: { cookie, ...headers },
      });
    };
    expect((await upload({})).status).toBe(403);
    expect((await upload({ 'x-portal-csrf': csrf })).status).toBe(201);
  });

  it('ends the session the browser held when it signs in again', async () => {
    const first = await signIn('kit');
    const { callback: url, signIn: pending } = await startSignIn('acme');
    const again = await callback(url, `${pending}; ${first}`);
    expect(again.status).toBe(302);
    expect((await me(first)).status).toBe(401);
    expect((await me(cookieOf(again, 'portal_session')!)).status).toBe(200);
  });

  it('ends with POST /v1/auth/logout', async () => {
    const cookie = await signIn('kim');
    const { csrf } = (await me(cookie)).body;
    const out = await gw.call('POST', '/v1/auth/logout', {
      as: null,
      headers: { cookie, 'x-portal-csrf': csrf },
    });
    expect(out.status).toBe(204);
    expect(out.headers.getSetCookie()[0]).toMatch(
      /^portal_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax/,
    );
    expect((await me(cookie)).status).toBe(401);
  });

  it('is accepted by another replica and expires after SESSION_TTL without a request', async () => {
    const replica = await startGateway({
      db: gw.db,
      bootstrap: bootstrap(),
      env: { PORTAL_PREFIX: gw.prefix, ACME_OIDC_SECRET: 'acme-s3cret', SESSION_TTL: '1500ms' },
    });
    try {
      const cookie = await signIn('lea');
      const onReplica = () => replica.call('GET', '/v1/me', { as: null, headers: { cookie } });
      expect((await onReplica()).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 800));
        expect((await onReplica()).status).toBe(200); // each request pushes the expiry back
      }
      await new Promise((r) => setTimeout(r, 1800));
      expect((await onReplica()).status).toBe(401);
      expect((await me(cookie)).status).toBe(401);
    } finally {
      await replica.close();
    }
  });

  it('is refused once the user is removed from the bootstrap file, who then cannot sign in again', async () => {
    const alice = await signIn('alice', { portal_role: 'author' });
    const signedUp = await signIn('max');
    expect((await me(alice)).body).toMatchObject({ userId: 'alice', via: 'oidc' });

    const doc = bootstrap();
    doc.orgs[0].users = doc.orgs[0].users.filter((u: { id: string }) => u.id !== 'alice');
    for (const s of doc.orgs[0].skills) s.owner = 'dave';
    const env = testEnv(gw.db, {
      PORTAL_BOOTSTRAP_FILE: tempFile('bootstrap.json', JSON.stringify(doc)),
      ACME_OIDC_SECRET: 'acme-s3cret',
    });
    await new BootstrapService(readConfig(env), gw.db.dataSource).apply();

    expect((await me(alice)).status).toBe(401);
    expect((await gw.call('GET', '/v1/me', { as: 'alice' })).status).toBe(401);
    acmeIdp.signInAs({ sub: 'alice' });
    const again = await startSignIn('acme');
    const refused = await callback(again.callback, again.signIn);
    expect(refused.status).toBe(403);
    // A user a sign-in created is not the file's to remove.
    expect((await me(signedUp)).status).toBe(200);
  });
});
