import IORedis, { type Redis } from 'ioredis';

/**
 * Deletes what a test left in Redis under its prefix: its own `prefix:…` keys and BullMQ's
 * `{prefix:…}` ones. The Redis server is shared by every suite and every run. Given a URL rather
 * than a client, it uses a connection of its own for it.
 */
export async function deleteRedisPrefix(redis: Redis | string, prefix: string): Promise<void> {
  const client = typeof redis === 'string' ? new IORedis(redis) : redis;
  try {
    const keys = [...(await client.keys(`{${prefix}:*`)), ...(await client.keys(`${prefix}:*`))];
    if (keys.length) await client.del(...keys);
  } finally {
    if (client !== redis) client.disconnect();
  }
}
