import { HttpException, NotFoundException } from '@nestjs/common';
import IORedis from 'ioredis';
import { Client } from 'pg';
import { QueryFailedError } from 'typeorm';
import { DalError } from '@portal/dal';
import { DomainError, ERROR_CODES } from '@portal/domain';
import { ERROR_STATUS } from '@portal/contracts';
import { toApiError } from './api-error.util';

describe('toApiError', () => {
  it('gives every API error code a status', () => {
    for (const code of ERROR_CODES) expect(ERROR_STATUS[code]).toBeGreaterThanOrEqual(400);
  });

  it.each([
    ['validation_failed', 400],
    ['unauthorized', 401],
    ['forbidden', 403],
    ['not_found', 404],
    ['compact_refused', 409],
    ['turn_paused', 409],
    ['too_large', 413],
    ['unsupported_type', 415],
    ['skill_rejected', 422],
    ['model_cannot_see', 422],
    ['attachment_not_found', 422],
    ['rate_limited', 429],
    ['too_many_streams', 429],
  ] as const)('maps %s to %i with its message', (code, status) => {
    expect(toApiError(new DomainError(code, 'Because.'))).toEqual({
      status,
      body: { error: { code, message: 'Because.' } },
    });
  });

  it("maps the framework's errors by status", () => {
    expect(toApiError(new HttpException('Request body is too large', 413)).body.error.code).toBe('too_large');
    expect(toApiError(new HttpException('Unsupported Media Type', 415)).body.error.code).toBe(
      'unsupported_type',
    );
    expect(toApiError(new NotFoundException('Cannot GET /x')).body.error).toEqual({
      code: 'not_found',
      message: 'Cannot GET /x',
    });
    expect(toApiError(new DalError('turn_active', 'busy')).status).toBe(409);
  });

  it('hides everything else behind 500 internal', () => {
    for (const err of [
      new Error('password=hunter2 at db'),
      new DomainError('invariant_violated', 'block 3 is not terminal'),
      new HttpException('upstream', 502),
      'a string',
    ]) {
      expect(toApiError(err)).toEqual({
        status: 500,
        body: { error: { code: 'internal', message: 'Internal server error' } },
      });
    }
  });

  it('answers a store outage with 503 unavailable: real pg and ioredis errors from a closed port', async () => {
    const pg = new Client({ host: '127.0.0.1', port: 1, user: 'postgres' });
    const refused = await pg.connect().then(
      () => null,
      (err: Error) => err,
    );
    await pg.end().catch(() => undefined);
    const redis = new IORedis('redis://127.0.0.1:1', { maxRetriesPerRequest: 0, lazyConnect: true });
    redis.on('error', () => undefined);
    const gaveUp = await redis.get('x').then(
      () => null,
      (err: Error) => err,
    );
    redis.disconnect();
    const shutdown = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
    });
    for (const err of [refused, gaveUp, new QueryFailedError('SELECT 1', [], shutdown)]) {
      expect(toApiError(err)).toEqual({
        status: 503,
        body: { error: { code: 'unavailable', message: 'The service is briefly unavailable; try again' } },
      });
    }
    // A query the database refuses for what it says is a fault of ours, not an outage.
    const syntax = Object.assign(new Error('syntax error at or near "x"'), { code: '42601' });
    expect(toApiError(new QueryFailedError('x', [], syntax)).status).toBe(500);
  });
});
