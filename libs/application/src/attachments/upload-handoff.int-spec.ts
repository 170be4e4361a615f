import { AttachmentId, OrgId } from '@portal/domain';
import { randomBytes, randomUUID } from 'node:crypto';
import { readRedisUrl } from '@portal/contracts';
import { RedisConnections } from '@portal/redis';
import { startOwnRedisCluster } from '@portal/testing';
import { UploadHandOff } from './upload-handoff';

const redisUrl = readRedisUrl(process.env);
const prefix = `handoff-spec-${randomBytes(4).toString('hex')}`;

describe('UploadHandOff', () => {
  it('keeps, gives back and forgets the bytes, scoped by org', async () => {
    const redis = new RedisConnections({ url: redisUrl });
    const handoff = new UploadHandOff(redis, prefix);
    try {
      const key = { orgId: OrgId('acme'), attachmentId: AttachmentId(randomUUID()) };
      const bytes = randomBytes(1_000_000);
      expect(await handoff.put(key, bytes, 60_000)).toBe(true);
      expect((await handoff.take(key))?.equals(bytes)).toBe(true);
      expect(await handoff.take({ ...key, orgId: OrgId('globex') })).toBeNull();
      await handoff.drop(key);
      expect(await handoff.take(key)).toBeNull();
      expect(await handoff.put(key, bytes, 0)).toBe(false);
      expect(await handoff.take(key)).toBeNull();
    } finally {
      await redis.close();
    }
  });

  it('keeps and gives back the bytes on a Redis Cluster', async () => {
    const cluster = await startOwnRedisCluster(3);
    const redis = new RedisConnections({ clusterNodes: cluster.nodes });
    try {
      const handoff = new UploadHandOff(redis, prefix);
      const key = { orgId: OrgId('acme'), attachmentId: AttachmentId(randomUUID()) };
      const bytes = randomBytes(200_000);
      expect(await handoff.put(key, bytes, 60_000)).toBe(true);
      expect((await handoff.take(key))?.equals(bytes)).toBe(true);
    } finally {
      await redis.close();
      await cluster.stop();
    }
  }, 60_000);

  it('answers false and null at once, never throws, when Redis cannot be reached', async () => {
    const redis = new RedisConnections({ url: 'redis://127.0.0.1:1' }); // nothing listens on port 1;
    const handoff = new UploadHandOff(redis, prefix);
    try {
      const key = { orgId: OrgId('acme'), attachmentId: AttachmentId(randomUUID()) };
      expect(await handoff.put(key, Buffer.from('bytes'), 60_000)).toBe(false);
      expect(await handoff.take(key)).toBeNull();
      await expect(handoff.drop(key)).resolves.toBeUndefined();
    } finally {
      await redis.close();
    }
  });
});
