/** The stable error codes of the API (API.md); the gateway maps each to an HTTP status in one place. */
export const ERROR_CODES = [
  'unauthorized',
  'forbidden',
  'csrf',
  'not_found',
  'validation_failed',
  'skill_rejected',
  'attachment_not_found',
  'model_cannot_see',
  'compact_refused',
  'turn_paused',
  'request_not_pending',
  'retry_refused',
  'conflict',
  'unsupported_type',
  'too_large',
  'invalid_transition',
  'invariant_violated',
  'rate_limited',
  'too_many_streams',
  'unavailable',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && (ERROR_CODES as readonly string[]).includes(value);
}

/** A rule of the product was broken. Carries a stable `code`; never a framework exception. */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;

  constructor(code: ErrorCode, message: string = code, details?: Record<string, unknown>) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

export function isDomainError(error: unknown, code?: ErrorCode): error is DomainError {
  return error instanceof DomainError && (code === undefined || error.code === code);
}
