import IORedis, { Cluster } from 'ioredis';
import type { RedisTarget } from '@portal/contracts';
import { RedisConnections, type RedisClient } from '@portal/redis';

/**
 * Deletes what a test left in Redis under its prefix: its own `prefix:…` keys and BullMQ's
 * `{prefix:…}` ones, on every master of a cluster. The Redis server is shared by every suite and
 * every run. Given a URL or a target rather than a client, it uses a connection of its own for it.
 */
export async function deleteRedisPrefix(
  redis: RedisClient | RedisTarget | string,
  prefix: string,
): Promise<void> {
  const own =
    typeof redis === 'string' || !('status' in redis)
      ? new RedisConnections(typeof redis === 'string' ? { url: redis } : redis)
      : null;
  const client = own ? own.shared('state') : (redis as RedisClient);
  try {
    for (const node of await redisMasters(client)) {
      const keys = [...(await node.keys(`{${prefix}:*`)), ...(await node.keys(`${prefix}:*`))];
      // One DEL per key: on a cluster the keys of one node still sit in several slots.
      await Promise.all(keys.map((key) => node.del(key)));
    }
  } finally {
    await own?.close();
  }
}

/** The server, or a connection to each master of the cluster (KEYS and SCAN read one node). */
export async function redisMasters(client: RedisClient): Promise<IORedis[]> {
  if (!(client instanceof Cluster)) return [client];
  if (client.status === 'wait') await client.connect();
  return client.nodes('master');
}
