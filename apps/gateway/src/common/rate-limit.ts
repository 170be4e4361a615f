import { Logger } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { envVar, parseEnv, type Env } from '@portal/contracts';
import { hashApiKey } from '@portal/dal';
import { DomainError } from '@portal/domain';
import type { RedisClient, RedisConnections } from '@portal/redis';

export interface RateLimitConfig {
  /** Requests one API key may make per window (RATE_LIMIT_PER_MINUTE); 0 turns the limit off. */
  perMinute: number;
  /** Length of a window; one minute except in tests. */
  windowMs: number;
}

export const rateLimitEnv = {
  RATE_LIMIT_PER_MINUTE: envVar.int(
    'Requests one API key or session may make per minute; 0 turns the limit off',
    600,
  ),
};

export function readRateLimitConfig(env: Env): RateLimitConfig {
  return { perMinute: parseEnv(z.object(rateLimitEnv), env).RATE_LIMIT_PER_MINUTE, windowMs: 60_000 };
}

export interface RateLimitDecision {
  allowed: boolean;
  /** Requests counted in the key's current window, this one included. */
  count: number;
  /** Seconds until the window ends (at least 1). */
  retryAfterSeconds: number;
}

/**
 * One round trip, atomic: counts the request in the key's window and returns the count and the
 * window's time left. The first request of a window starts it (sets the expiry); a counter that
 * somehow lost its expiry gets it back, so a key is never locked out for good.
 */
const COUNT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return { n, ttl }`;

/**
 * Per-API-key rate limit, a fixed window counted in Redis so every gateway replica shares it: at
 * most `perMinute` requests per key per window, then 429 `rate_limited` with `retry-after` until
 * the window ends. The window starts at the key's first request and its length is kept by Redis
 * (the key's expiry), so replicas need no common clock. Counters are keyed by the key's sha256,
 * never the key. Health and metrics are public routes and never reach it. When Redis cannot be
 * reached the request is let through (logged): the limit protects capacity, it is not
 * authentication, and readiness already reports Redis. One key per API key and one-key script, so
 * on a Redis Cluster the counters spread across the nodes.
 */
export class RateLimiter {
  private readonly redis: RedisClient;
  private readonly prefix: string;
  private readonly logger = new Logger('RateLimiter');

  constructor(
    readonly config: RateLimitConfig,
    connection: { redis: RedisConnections; prefix: string },
  ) {
    this.prefix = `${connection.prefix}:rate-limit:`;
    this.redis = connection.redis.shared('rate-limit');
  }

  get enabled(): boolean {
    return this.config.perMinute > 0;
  }

  /** The Redis key counting `apiKey`'s requests. */
  keyOf(apiKey: string): string {
    return this.prefix + hashApiKey(apiKey);
  }

  /** Counts one request of `apiKey`; null when Redis could not be asked. */
  async hit(apiKey: string): Promise<RateLimitDecision | null> {
    try {
      if (this.redis.status === 'wait') await this.redis.connect();
      const [count, ttlMs] = (await this.redis.eval(
        COUNT_SCRIPT,
        1,
        this.keyOf(apiKey),
        String(this.config.windowMs),
      )) as [number, number];
      return {
        allowed: count <= this.config.perMinute,
        count,
        retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
      };
    } catch (err) {
      this.logger.warn(`rate limit not checked, Redis failed: ${(err as Error).message}`);
      return null;
    }
  }

  /** Throws 429 `rate_limited` (with `retry-after` on the reply) once `apiKey` has used its window. */
  async enforce(apiKey: string, reply: FastifyReply | undefined): Promise<void> {
    if (!this.enabled) return;
    const decision = await this.hit(apiKey);
    if (!decision || decision.allowed) return;
    void reply?.header('retry-after', String(decision.retryAfterSeconds));
    throw new DomainError(
      'rate_limited',
      `Too many requests: this API key may make ${this.config.perMinute} per minute; retry in ${decision.retryAfterSeconds} s`,
      { retryAfterSeconds: decision.retryAfterSeconds },
    );
  }
}
