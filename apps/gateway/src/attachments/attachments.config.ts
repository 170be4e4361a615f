import { envInt, type Env } from '@portal/contracts';

export interface AttachmentsConfig {
  /** Uploads above this many bytes answer 413 `too_large`. */
  maxBytes: number;
}

export const ATTACHMENTS_CONFIG = Symbol('ATTACHMENTS_CONFIG');

/** `ATTACHMENT_MAX_BYTES` [25 MiB]. */
export function readAttachmentsConfig(env: Env): AttachmentsConfig {
  return { maxBytes: envInt(env, 'ATTACHMENT_MAX_BYTES', 25 * 1024 * 1024, { min: 1 }) };
}
