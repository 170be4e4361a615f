import { HttpException } from '@nestjs/common';
import { DalError } from '@portal/dal';
import { ERROR_STATUS } from '@portal/contracts';
import { DomainError, type ErrorCode } from '@portal/domain';

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

const UNAVAILABLE: ApiError = {
  status: 503,
  body: { error: { code: 'unavailable', message: 'The service is briefly unavailable; try again' } },
};

/** Postgres and Redis answers that say the store is down or restarting, not that the request is wrong. */
const OUTAGE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '08000',
  '08001',
  '08003',
  '08006',
]);
const OUTAGE_MESSAGE =
  /Connection terminated|Connection is closed|connect ECONNREFUSED|timeout exceeded when trying to connect|Reached the max retries per request/i;

/** True when the error (or what it wraps: TypeORM's `driverError`, a `cause`) is a store outage. */
export function isStoreOutage(err: unknown, depth = 0): boolean {
  // Not `instanceof Error`: a socket error is made in Node's own realm, which Jest's is not.
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const { code, message, driverError, cause } = err as Record<string, unknown>;
  if (typeof code === 'string' && OUTAGE_CODES.has(code)) return true;
  if (typeof message === 'string' && OUTAGE_MESSAGE.test(message)) return true;
  return isStoreOutage(driverError, depth + 1) || isStoreOutage(cause, depth + 1);
}

/**
 * Any thrown value as the API answers it; a store outage becomes 503 `unavailable` (the client may
 * retry), any other server fault `internal`, leaking nothing.
 */
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
  if (code === undefined && isStoreOutage(err)) return UNAVAILABLE;
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
