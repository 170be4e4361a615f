import { KEYS, startGateway, type Harness } from '../../test/gateway-harness.util';
import { ADMIN_COOKIE } from './admin-session.service';

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

describe('POST /v1/admin/session', () => {
  it('is for admins: 401 without a key, 403 to a member', async () => {
    expect((await gw.call('POST', '/v1/admin/session', { as: null })).status).toBe(401);
    const member = await gw.call('POST', '/v1/admin/session', { as: 'bob' });
    expect(member.status).toBe(403);
    expect(member.body.error.code).toBe('forbidden');
  });

  it('sets a cookie, scoped to the dashboard, that opens it in a browser without the key', async () => {
    const res = await gw.call('POST', '/v1/admin/session', { as: 'carol' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ dashboard: '/admin/queues', expiresAt: expect.any(String) });
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`^${ADMIN_COOKIE}=[\\w-]{40,};`));
    expect(setCookie).toContain('Path=/admin/queues');
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Max-Age=1800');
    const cookie = setCookie.split(';')[0];

    expect((await board('', { cookie })).status).toBe(200);
    expect((await board('/api/queues', { cookie })).status).toBe(200);
    expect((await board('', { cookie: `${ADMIN_COOKIE}=forged` })).status).toBe(401);
    // The session is not an API key.
    expect((await gw.call('GET', '/v1/me', { as: null, headers: { cookie } })).status).toBe(401);
  });

  it('lets a session in only while its user is an admin', async () => {
    const res = await gw.call('POST', '/v1/admin/session', { as: 'carol' });
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0];
    await gw.db.dataSource.query(`UPDATE users SET role = 'member' WHERE id = 'carol'`);
    try {
      expect((await board('', { cookie })).status).toBe(403);
    } finally {
      await gw.db.dataSource.query(`UPDATE users SET role = 'admin' WHERE id = 'carol'`);
    }
  });
});
