import { envDuration, envInt, type Env } from '@portal/contracts';
import type { ModelEntry } from '@portal/model';

export interface AttachmentsConfig {
  /** Uploads above this many bytes answer 413 `too_large`. */
  maxBytes: number;
  /**
   * How long an upload's bytes wait in Redis for the ingest worker (UploadHandOff); 0 turns the
   * hand-off off, and the worker reads the blob store only.
   */
  handoffTtlMs: number;
  /** The model catalogue: a picture is shown as its model reads it. */
  catalogue: readonly ModelEntry[];
}

export const ATTACHMENTS_CONFIG = Symbol('ATTACHMENTS_CONFIG');

/** `ATTACHMENT_MAX_BYTES` [25 MiB], `UPLOAD_HANDOFF_TTL` [30s]. */
export function readAttachmentsConfig(env: Env, catalogue: readonly ModelEntry[]): AttachmentsConfig {
  return {
    catalogue,
    maxBytes: envInt(env, 'ATTACHMENT_MAX_BYTES', 25 * 1024 * 1024, { min: 1 }),
    handoffTtlMs: envDuration(env, 'UPLOAD_HANDOFF_TTL', 30_000),
  };
}
