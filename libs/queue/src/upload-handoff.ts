import type { OnModuleDestroy } from '@nestjs/common';
import IORedis, { type Redis } from 'ioredis';
import { getRedisBytes } from './redis-get.util';

/** Silence, while a take reads, after which Redis is taken to be gone (and the blob store is read). */
const TAKE_IDLE_TIMEOUT_MS = 5_000;

/** Whose upload: the org scopes the key, so another org's id finds nothing. */
export interface UploadKey {
  orgId: string;
  attachmentId: string;
}

/**
 * A fresh upload's bytes kept in Redis for a short while (the gateway's `UPLOAD_HANDOFF_TTL`), so
 * the ingest worker can start reading them while the gateway still writes the durable copy to the
 * blob store: that write then costs the upload's answer, not the time until the file is read.
 * Redis keeps nothing on disk, so the blob store stays the truth: a worker that finds no copy here
 * (expired, dropped, Redis restarted) reads the blob store, which the gateway wrote before it
 * answered 201. On its own connection, so a large SET never holds up the queue or the events.
 */
export class UploadHandOff implements OnModuleDestroy {
  private readonly redis: Redis;

  constructor(
    private readonly redisUrl: string,
    private readonly prefix: string,
  ) {
    // Best effort both ways: a failure answers at once rather than waiting for a reconnection.
    this.redis = new IORedis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  }

  /** Keeps the bytes for `ttlMs`; false (never a throw) when Redis did not take them. */
  async put(key: UploadKey, bytes: Buffer, ttlMs: number): Promise<boolean> {
    if (ttlMs <= 0) return false;
    try {
      await this.redis.set(this.keyOf(key), bytes, 'PX', ttlMs);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * The bytes while they are kept, else null (also when Redis cannot be reached). Read into a
   * buffer of their size (getRedisBytes); a `rediss://` Redis through ioredis, whose reply holds
   * three times the file's size while the file is read.
   */
  async take(key: UploadKey): Promise<Buffer | null> {
    const read = this.redisUrl.startsWith('redis://')
      ? getRedisBytes(this.redisUrl, this.keyOf(key), TAKE_IDLE_TIMEOUT_MS)
      : this.redis.getBuffer(this.keyOf(key));
    return read.catch(() => null);
  }

  /** Forgets the bytes once they are read for good; the TTL would, later. */
  async drop(key: UploadKey): Promise<void> {
    await this.redis.del(this.keyOf(key)).catch(() => undefined);
  }

  async onModuleDestroy(): Promise<void> {
    this.redis.disconnect();
  }

  private keyOf({ orgId, attachmentId }: UploadKey): string {
    // The org in hex: no org id can end where another's key begins.
    return `${this.prefix}:upload:${Buffer.from(orgId, 'utf8').toString('hex')}:${attachmentId}`;
  }
}
