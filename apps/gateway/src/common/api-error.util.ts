import { HttpException } from '@nestjs/common';
import { DalError } from '@portal/dal';
import { DomainError, type ErrorCode } from '@portal/domain';

/** The API's error codes and their HTTP statuses, in one place. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  compact_refused: 409,
  turn_paused: 409,
  request_not_pending: 409,
  conflict: 409,
  invalid_transition: 409,
  too_large: 413,
  unsupported_type: 415,
  skill_rejected: 422,
  attachment_not_found: 422,
  model_cannot_see: 422,
  rate_limited: 429,
  invariant_violated: 500,
};

/** Codes for framework errors that carry only an HTTP status (bad JSON, body too large, no route). */
const CODE_OF_STATUS: Record<number, ErrorCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  409: 'conflict',
  413: 'too_large',
  415: 'unsupported_type',
  429: 'rate_limited',
};

const DAL_CODES: Record<DalError['code'], ErrorCode> = {
  not_found: 'not_found',
  turn_active: 'conflict',
  block_conflict: 'conflict',
  api_key_taken: 'conflict',
};

export interface ApiError {
  status: number;
  body: { error: { code: string; message: string } };
}

const INTERNAL: ApiError = {
  status: 500,
  body: { error: { code: 'internal', message: 'Internal server error' } },
};

/** Any thrown value as the API answers it; a server fault becomes `internal`, leaking nothing. */
export function toApiError(err: unknown): ApiError {
  let code: ErrorCode | undefined;
  let message = '';
  if (err instanceof DomainError) {
    code = err.code;
    message = err.message;
  } else if (err instanceof DalError) {
    code = DAL_CODES[err.code];
    message = err.message;
  } else if (err instanceof HttpException && err.getStatus() < 500) {
    code = CODE_OF_STATUS[err.getStatus()] ?? 'validation_failed';
    message = err.message;
  }
  if (code === undefined || ERROR_STATUS[code] >= 500) return INTERNAL;
  return { status: ERROR_STATUS[code], body: { error: { code, message } } };
}

/**
 * Fastify's own errors before any route runs (Fastify's `frameworkErrors`): a URL that does not
 * decode (`%ff`, an encoded lone surrogate) or a path segment past its length limit. Answered as
 * every other error, 400 `validation_failed`, instead of Fastify's own body.
 */
export function frameworkError(err: { message: string }): ApiError {
  return toApiError(new DomainError('validation_failed', `The URL is not valid: ${err.message}`));
}
