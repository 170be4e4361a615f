import type { AttachmentId, OrgId } from '@portal/domain';
import type { RedisClient, RedisConnections } from '@portal/redis';

/** Whose upload: the org scopes the key, so another org's id finds nothing. */
export interface UploadKey {
  orgId: OrgId;
  attachmentId: AttachmentId;
}

/**
 * A fresh upload's bytes kept in Redis for a short while (the gateway's `UPLOAD_HANDOFF_TTL`), so
 * the ingest worker can start reading them while the gateway still writes the durable copy to the
 * blob store: that write then costs the upload's answer, not the time until the file is read.
 * Redis keeps nothing on disk, so the blob store stays the truth: a worker that finds no copy here
 * (expired, dropped, Redis restarted) reads the blob store, which the gateway wrote before it
 * answered 201. One key per upload, so on a Redis Cluster uploads spread across the nodes.
 */
export class UploadHandOff {
  private readonly redis: RedisClient;

  constructor(
    connections: RedisConnections,
    private readonly prefix: string,
  ) {
    this.redis = connections.shared('handoff');
  }

  /** Keeps the bytes for `ttlMs`; false (never a throw) when Redis did not take them. */
  async put(key: UploadKey, bytes: Buffer, ttlMs: number): Promise<boolean> {
    if (ttlMs <= 0) return false;
    return this.redis.set(this.keyOf(key), bytes, 'PX', ttlMs).then(
      (reply) => reply === 'OK',
      () => false,
    );
  }

  /** The bytes while they are kept, else null (also when Redis cannot be reached). */
  async take(key: UploadKey): Promise<Buffer | null> {
    return this.redis.getBuffer(this.keyOf(key)).then(
      (reply) => (Buffer.isBuffer(reply) ? reply : null),
      () => null,
    );
  }

  /** Forgets the bytes once they are read for good; the TTL would, later. */
  async drop(key: UploadKey): Promise<void> {
    await this.redis.del(this.keyOf(key)).catch(() => undefined);
  }

  private keyOf({ orgId, attachmentId }: UploadKey): string {
    // The org in hex: no org id can end where another's key begins.
    return `${this.prefix}:upload:${Buffer.from(orgId, 'utf8').toString('hex')}:${attachmentId}`;
  }
}
