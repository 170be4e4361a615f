import { envDuration, envInt, type Env } from '@portal/contracts';

export interface SseConfig {
  /** Open streams one user may hold on a gateway; beyond, 429 `too_many_streams`. 0: no cap. */
  maxPerUser: number;
  /**
   * Bytes a client may leave unread in its stream's buffer; a client past it when the next
   * events come is dropped, and reconnects with `Last-Event-ID`.
   */
  maxBufferBytes: number;
  /** Between comment lines that keep proxies from closing idle streams and find dead sockets. */
  heartbeatMs: number;
}

/** `SSE_MAX_PER_USER` [20], `SSE_MAX_BUFFER_BYTES` [256 KiB], `SSE_HEARTBEAT` [15s]. */
export function readSseConfig(env: Env): SseConfig {
  return {
    maxPerUser: envInt(env, 'SSE_MAX_PER_USER', 20, { min: 0 }),
    maxBufferBytes: envInt(env, 'SSE_MAX_BUFFER_BYTES', 256 * 1024, { min: 1024 }),
    heartbeatMs: envDuration(env, 'SSE_HEARTBEAT', 15_000, { minMs: 10 }),
  };
}
