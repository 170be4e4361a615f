import { followSignIn, setCookie, startTestIdp, type TestIdp } from '@portal/testing/oidc';
import { KEYS, STANDARD_BOOTSTRAP, startGateway, type Harness } from '../../test/gateway-harness.util';

let gw: Harness;
beforeAll(async () => {
  gw = await startGateway({ env: { PORTAL_OPERATOR_ORGS: 'acme' } });
});
afterAll(async () => {
  await gw?.close();
});

/** A dashboard request with a key, a cookie, both or neither. */
async function board(path: string, opts: { key?: string; cookie?: string } = {}) {
  const res = await fetch(`${gw.url}/admin/queues${path}`, {
    headers: {
      ...(opts.key && { authorization: `Bearer ${opts.key}` }),
      ...(opts.cookie && { cookie: opts.cookie }),
    },
  });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', text };
}

const error = (text: string) => JSON.parse(text).error.code;

describe('the queue dashboard at /admin/queues', () => {
  it('answers 401 without a key, 403 to a member or an author, 200 to an admin', async () => {
    const anonymous = await board('');
    expect(anonymous.status).toBe(401);
    expect(error(anonymous.text)).toBe('unauthorized');
    expect(error((await board('', { key: 'pk_nobody_has_this' })).text)).toBe('unauthorized');
    for (const who of [KEYS.bob, KEYS.alice]) {
      const refused = await board('', { key: who });
      expect(refused.status).toBe(403);
      expect(error(refused.text)).toBe('forbidden');
    }
    const admin = await board('', { key: KEYS.carol });
    expect(admin.status).toBe(200);
    expect(admin.type).toContain('text/html');
  });

  it('refuses an admin of an org that does not operate the portal', async () => {
    const other = await startGateway({ env: { PORTAL_OPERATOR_ORGS: 'globex' } });
    try {
      const res = await fetch(`${other.url}/admin/queues`, {
        headers: { authorization: `Bearer ${KEYS.carol}` },
      });
      expect(res.status).toBe(403);
      expect((await res.json()).error.code).toBe('forbidden');
    } finally {
      await other.close();
    }
  });

  it('guards its API and its assets the same way, and lists the three queues', async () => {
    expect((await board('/api/queues')).status).toBe(401);
    expect((await board('/api/queues', { key: KEYS.bob })).status).toBe(403);
    const api = await board('/api/queues', { key: KEYS.carol });
    expect(api.status).toBe(200);
    const names = (JSON.parse(api.text).queues as { name: string }[]).map((q) => q.name).sort();
    expect(names).toEqual(['attachments', 'compactions', 'turns']);

    const page = await board('', { key: KEYS.carol });
    expect(page.text).toContain('<base href="/admin/queues/"');
    const asset = /src="(static\/js\/[^"]+\.js)"/.exec(page.text)?.[1];
    expect(asset).toBeDefined();
    expect((await board(`/${asset}`)).status).toBe(401);
    expect((await board(`/${asset}`, { key: KEYS.carol })).status).toBe(200);
  });
});

describe('the queue dashboard with a browser session', () => {
  let idp: TestIdp;
  let sso: Harness;
  beforeAll(async () => {
    idp = await startTestIdp();
    const doc = structuredClone(STANDARD_BOOTSTRAP) as any;
    doc.orgs[0].oidc = { issuer: idp.issuer, clientId: 'portal', roleClaim: 'portal_role' };
    sso = await startGateway({ bootstrap: doc, env: { PORTAL_OPERATOR_ORGS: 'acme' } });
    idp.addClient({ clientId: 'portal', redirectUris: [`${sso.url}/v1/auth/oidc/acme/callback`] });
  });
  afterAll(async () => {
    await sso?.close();
    await idp?.close();
  });

  /** The session cookie of `sub`, signed in through the provider as a browser would. */
  async function session(sub: string, role: string): Promise<string> {
    idp.signInAs({ sub, claims: { portal_role: role } });
    const { callback, signIn } = await followSignIn(sso.url, 'acme');
    const res = await fetch(callback, { redirect: 'manual', headers: { cookie: signIn } });
    return setCookie(res, 'portal_session')!;
  }

  const open = (cookie: string, path = '', init: RequestInit = {}) =>
    fetch(`${sso.url}/admin/queues${path}`, { ...init, headers: { cookie, ...init.headers } });

  it("opens it for an operator org's admin, not for a member", async () => {
    const admin = await session('olga', 'admin');
    expect((await open(admin)).status).toBe(200);
    expect((await open(admin, '/api/queues')).status).toBe(200);
    const member = await session('mia', 'member');
    expect((await open(member)).status).toBe(403);
    expect((await open('portal_session=forged')).status).toBe(401);
    // The old dashboard-only session is gone.
    expect((await sso.call('POST', '/v1/admin/session', { as: 'carol' })).status).toBe(404);
  });

  it("takes the board's own actions from the portal's origin only", async () => {
    const admin = await session('otto', 'admin');
    const pause = (origin?: string) =>
      open(admin, '/api/queues/turns/pause', { method: 'PUT', headers: origin ? { origin } : {} });
    const elsewhere = await pause('https://evil.example.com');
    expect(elsewhere.status).toBe(403);
    expect((await elsewhere.json()).error.code).toBe('csrf');
    expect((await pause()).status).toBe(403);
    expect((await pause(sso.url)).status).toBe(200);
    await open(admin, '/api/queues/turns/resume', { method: 'PUT', headers: { origin: sso.url } });
  });
});
