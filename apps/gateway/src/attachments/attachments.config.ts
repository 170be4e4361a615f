import { z } from 'zod';
import { envVar, parseEnv, type Env } from '@portal/contracts';
import type { ModelEntry } from '@portal/model';

export const attachmentsEnv = {
  ATTACHMENT_MAX_BYTES: envVar.int('Uploads above this many bytes answer 413 `too_large`', 25 * 1024 * 1024, {
    min: 1,
  }),
  UPLOAD_HANDOFF_TTL: envVar.duration(
    "How long an upload's bytes wait in Redis for the ingest worker while the blob store is written; 0 turns the hand-off off",
    '30s',
  ),
};

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

export function readAttachmentsConfig(env: Env, catalogue: readonly ModelEntry[]): AttachmentsConfig {
  const vars = parseEnv(z.object(attachmentsEnv), env);
  return { catalogue, maxBytes: vars.ATTACHMENT_MAX_BYTES, handoffTtlMs: vars.UPLOAD_HANDOFF_TTL };
}
