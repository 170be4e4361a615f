import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '@portal/domain';

/** The API's error codes and their HTTP statuses, in one place. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  csrf: 403,
  not_found: 404,
  compact_refused: 409,
  turn_paused: 409,
  request_not_pending: 409,
  retry_refused: 409,
  conflict: 409,
  invalid_transition: 409,
  too_large: 413,
  unsupported_type: 415,
  skill_rejected: 422,
  attachment_not_found: 422,
  model_cannot_see: 422,
  rate_limited: 429,
  too_many_streams: 429,
  invariant_violated: 500,
  unavailable: 503,
};

/** Every error answer: `{ error: { code, message } }`; `internal` is any unexpected failure. */
export const errorBodySchema = z.object({
  error: z.object({
    code: z.enum([...ERROR_CODES, 'internal']),
    message: z.string(),
  }),
});
export type ErrorBody = z.output<typeof errorBodySchema>;
