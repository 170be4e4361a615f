import { z } from 'zod';
import { envVar, parseEnv, type Env } from '@portal/contracts';

export const sseEnv = {
  SSE_MAX_PER_USER: envVar.int(
    'Open event streams one user may hold on a gateway; beyond, 429 `too_many_streams`; 0: no cap',
    20,
    { min: 0 },
  ),
  SSE_MAX_BUFFER_BYTES: envVar.int(
    "Bytes a client may leave unread in its stream's buffer; a client past it is dropped and reconnects with Last-Event-ID",
    256 * 1024,
    { min: 1024 },
  ),
  SSE_HEARTBEAT: envVar.duration(
    'Between comment lines that keep proxies from closing idle streams and find dead sockets',
    '15s',
    { minMs: 10 },
  ),
};

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

export function readSseConfig(env: Env): SseConfig {
  const vars = parseEnv(z.object(sseEnv), env);
  return {
    maxPerUser: vars.SSE_MAX_PER_USER,
    maxBufferBytes: vars.SSE_MAX_BUFFER_BYTES,
    heartbeatMs: vars.SSE_HEARTBEAT,
  };
}
