import { hashApiKey } from '@portal/dal';
import { KEYS, startGateway, type Harness } from '../gateway-harness.util';

/**
 * Issue part 4: per-key rate limits backed by Redis (RATE_LIMIT_PER_MINUTE, fixed window, 429
 * `rate_limited` with `retry-after`; health and metrics exempt), shared by every gateway replica
 * on the same Redis; and the size caps (413 `too_large`) on uploads and JSON bodies.
 */
const PER_MINUTE = 5;
let gw: Harness;
let replica: Harness;

beforeAll(async () => {
  gw = await startGateway({
    env: { RATE_LIMIT_PER_MINUTE: String(PER_MINUTE), ATTACHMENT_MAX_BYTES: '1024' },
  });
  // A second gateway on the same database, Redis and prefix: another replica of the same portal.
  replica = await startGateway({
    db: gw.db,
    env: { PORTAL_PREFIX: gw.prefix, RATE_LIMIT_PER_MINUTE: String(PER_MINUTE) },
  });
}, 60_000);

afterAll(async () => {
  await replica?.close();
  await gw?.close();
});

describe('per-key rate limit', () => {
  it(`lets ${PER_MINUTE} requests of a key through in a minute, then answers 429 rate_limited with retry-after on every route`, async () => {
    for (let i = 0; i < PER_MINUTE; i++)
      expect((await gw.call('GET', '/v1/me', { as: 'alice' })).status).toBe(200);
    const refused = await gw.call('GET', '/v1/me', { as: 'alice' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { code: 'rate_limited', message: expect.stringContaining(`${PER_MINUTE} per minute`) },
    });
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    // Every route, reads and writes alike, before any lookup or role check.
    for (const [method, path, body] of [
      ['GET', '/v1/agents'],
      ['POST', '/v1/conversations', { agentId: 'researcher' }],
      ['GET', '/v1/conversations/00000000-0000-0000-0000-000000000000'],
    ] as const) {
      const res = await gw.call(method, path, { as: 'alice', body });
      expect([path, res.status, res.body.error?.code]).toEqual([path, 429, 'rate_limited']);
    }
  });

  it('counts each key on its own, in Redis under the hash of the key', async () => {
    expect((await gw.call('GET', '/v1/me', { as: 'bob' })).status).toBe(200);
    const stored = await gw.redis.keys(`${gw.prefix}:rate-limit:*`);
    expect(stored).toEqual(expect.arrayContaining([`${gw.prefix}:rate-limit:${hashApiKey(KEYS.alice)}`]));
    expect(stored.join(' ')).not.toContain(KEYS.alice);
    const ttl = await gw.redis.pttl(`${gw.prefix}:rate-limit:${hashApiKey(KEYS.alice)}`);
    expect(ttl > 0 && ttl <= 60_000).toBe(true);
  });

  it('is shared by the replicas: a key spread over two gateways gets the same five', async () => {
    const answers: number[] = [];
    for (let i = 0; i < PER_MINUTE + 1; i++)
      answers.push((await (i % 2 ? replica : gw).call('GET', '/v1/me', { as: 'carol' })).status);
    expect(answers).toEqual([200, 200, 200, 200, 200, 429]);
    expect((await replica.call('GET', '/v1/me', { as: 'carol' })).status).toBe(429);
  });

  it('never limits health, readiness or metrics, which need no key and count for none', async () => {
    for (let i = 0; i < 3 * PER_MINUTE; i++) {
      for (const path of ['/health/live', '/health/ready', '/metrics']) {
        expect([path, (await gw.call('GET', path, { as: null })).status]).toEqual([path, 200]);
      }
    }
    // Scraped with a limited key too: still answered.
    expect((await gw.call('GET', '/metrics', { as: 'alice' })).status).toBe(200);
    expect((await gw.call('GET', '/health/ready', { as: 'alice' })).status).toBe(200);
    // Dave has sent nothing yet: the probes above took none of his five.
    for (let i = 0; i < PER_MINUTE; i++)
      expect((await gw.call('GET', '/v1/me', { as: 'dave' })).status).toBe(200);
  });

  it('answers a wrong key 401, never 429 (a key that does not exist has no window to use up)', async () => {
    for (let i = 0; i < 3 * PER_MINUTE; i++) {
      const res = await gw.call('GET', '/v1/me', {
        as: null,
        headers: { authorization: 'Bearer pk_nobody' },
      });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
  });
});

describe('size caps', () => {
  async function upload(bytes: number) {
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(bytes, 0x61)]), 'a.txt');
    const res = await fetch(`${gw.url}/v1/attachments`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEYS.mallory}` },
      body: form,
    });
    return { status: res.status, body: await res.json() };
  }

  it('refuses an upload past ATTACHMENT_MAX_BYTES with 413 too_large, and takes one at the cap', async () => {
    expect(await upload(1025)).toEqual({
      status: 413,
      body: { error: { code: 'too_large', message: expect.stringContaining('1024 bytes') } },
    });
    expect((await upload(1024)).status).toBe(201);
  });

  it('refuses a JSON body over 1 MB with 413 too_large', async () => {
    const res = await gw.call('POST', '/v1/skills', {
      as: 'mallory',
      body: { slug: 'big', name: 'Big', description: 'Big.', instructions: 'x'.repeat(1_100_000) },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('too_large');
  });
});
