import type { Redis } from 'ioredis';

/**
 * Deletes what a test left in Redis under its prefix: its own `prefix:…` keys and BullMQ's
 * `{prefix:…}` ones. The Redis server is shared by every suite and every run.
 */
export async function deleteRedisPrefix(redis: Redis, prefix: string): Promise<void> {
  const keys = [...(await redis.keys(`{${prefix}:*`)), ...(await redis.keys(`${prefix}:*`))];
  if (keys.length) await redis.del(...keys);
}
