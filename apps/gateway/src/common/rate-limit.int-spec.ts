import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import IORedis from 'ioredis';
import { readRedisUrl } from '@portal/contracts';
import { hashApiKey } from '@portal/dal';
import { DomainError } from '@portal/domain';
import { RedisConnections } from '@portal/redis';
import { deleteRedisPrefix } from '@portal/testing';
import { RateLimiter, readRateLimitConfig } from './rate-limit';

const REDIS_URL = readRedisUrl(process.env);
const prefix = `rl-${randomBytes(4).toString('hex')}`;
const redis = new IORedis(REDIS_URL);
const connections: RedisConnections[] = [];

/** A limiter on connections of its own, as each gateway replica has. */
function limiter(perMinute: number, windowMs = 60_000): RateLimiter {
  const redis = new RedisConnections({ url: REDIS_URL });
  connections.push(redis);
  return new RateLimiter({ perMinute, windowMs }, { redis, prefix });
}

/** A reply that only records its headers. */
function fakeReply() {
  const headers: Record<string, string> = {};
  const reply = { header: (name: string, value: string) => ((headers[name] = value), reply) };
  return { headers, reply: reply as never };
}

afterAll(async () => {
  for (const c of connections) await c.close();
  await deleteRedisPrefix(redis, prefix);
  redis.disconnect();
});

describe('readRateLimitConfig', () => {
  it('defaults to 600 a minute; 0 turns it off; anything else that is not a whole number is refused', () => {
    expect(readRateLimitConfig({})).toEqual({ perMinute: 600, windowMs: 60_000 });
    expect(readRateLimitConfig({ RATE_LIMIT_PER_MINUTE: '0' }).perMinute).toBe(0);
    expect(() => readRateLimitConfig({ RATE_LIMIT_PER_MINUTE: '-1' })).toThrow(/RATE_LIMIT_PER_MINUTE/);
    expect(() => readRateLimitConfig({ RATE_LIMIT_PER_MINUTE: 'lots' })).toThrow(/RATE_LIMIT_PER_MINUTE/);
  });
});

describe('RateLimiter (fixed window in Redis)', () => {
  it('lets `perMinute` requests of a key through, then refuses with 429 rate_limited and retry-after', async () => {
    const rl = limiter(3);
    const key = `pk_${randomBytes(6).toString('hex')}`;
    for (let i = 0; i < 3; i++) await expect(rl.enforce(key, fakeReply().reply)).resolves.toBeUndefined();
    const { headers, reply } = fakeReply();
    const refused = await rl.enforce(key, reply).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(DomainError);
    expect(refused).toMatchObject({ code: 'rate_limited' });
    const retryAfter = Number(headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  });

  it('counts each key on its own, in Redis, under the hash of the key (never the key)', async () => {
    const rl = limiter(2);
    const [a, b] = [`pk_a_${randomBytes(6).toString('hex')}`, `pk_b_${randomBytes(6).toString('hex')}`];
    expect((await rl.hit(a))?.count).toBe(1);
    expect((await rl.hit(a))?.count).toBe(2);
    expect((await rl.hit(a))?.allowed).toBe(false);
    expect(await rl.hit(b)).toMatchObject({ allowed: true, count: 1 });

    const stored = await redis.keys(`${prefix}:rate-limit:*`);
    expect(stored).toEqual(expect.arrayContaining([`${prefix}:rate-limit:${hashApiKey(a)}`]));
    expect(stored.join(' ')).not.toContain(a);
    expect(await redis.get(rl.keyOf(a))).toBe('3');
    const ttl = await redis.pttl(rl.keyOf(a));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('is shared by every limiter on the same Redis and prefix (every gateway replica)', async () => {
    const [one, two] = [limiter(4), limiter(4)];
    const key = `pk_shared_${randomBytes(6).toString('hex')}`;
    await one.hit(key);
    await two.hit(key);
    await one.hit(key);
    expect(await two.hit(key)).toMatchObject({ allowed: true, count: 4 });
    expect(await one.hit(key)).toMatchObject({ allowed: false, count: 5 });
  });

  it('opens a new window once the old one has ended', async () => {
    const rl = limiter(1, 200);
    const key = `pk_window_${randomBytes(6).toString('hex')}`;
    expect((await rl.hit(key))?.allowed).toBe(true);
    expect((await rl.hit(key))?.allowed).toBe(false);
    // The window's end is Redis's expiry of the counter: wait for it, not for a clock.
    for (let i = 0; i < 100 && (await redis.exists(rl.keyOf(key))); i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await rl.hit(key)).toMatchObject({ allowed: true, count: 1 });
  });

  it('gives a counter that lost its expiry a new one, so no key is locked out for good', async () => {
    const rl = limiter(1);
    const key = `pk_stuck_${randomBytes(6).toString('hex')}`;
    await redis.set(rl.keyOf(key), '99');
    const decision = await rl.hit(key);
    expect(decision).toMatchObject({ allowed: false, count: 100 });
    expect(await redis.pttl(rl.keyOf(key))).toBeGreaterThan(0);
  });

  it('does nothing when turned off, and lets requests through when Redis cannot be reached', async () => {
    const off = limiter(0);
    for (let i = 0; i < 5; i++)
      await expect(off.enforce('pk_off', fakeReply().reply)).resolves.toBeUndefined();
    expect(await redis.exists(off.keyOf('pk_off'))).toBe(0);

    const failing = limiter(1);
    const down = jest.spyOn(IORedis.prototype, 'eval').mockRejectedValue(new Error('Connection is closed.'));
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      expect(await failing.hit('pk_any')).toBeNull();
      await expect(failing.enforce('pk_any', fakeReply().reply)).resolves.toBeUndefined();
      await expect(failing.enforce('pk_any', fakeReply().reply)).resolves.toBeUndefined();
      expect(warned).toHaveBeenCalledWith(expect.stringContaining('rate limit not checked, Redis failed'));
    } finally {
      down.mockRestore();
      warned.mockRestore();
    }
  });
});
