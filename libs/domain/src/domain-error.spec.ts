import { DomainError, ERROR_CODES, isDomainError, isErrorCode } from './domain-error';

describe('DomainError', () => {
  it('carries a stable code, a message and details', () => {
    const e = new DomainError('not_found', 'No such turn', { turnId: 't1' });
    expect(e).toBeInstanceOf(Error);
    expect(e).toBeInstanceOf(DomainError);
    expect(e.name).toBe('DomainError');
    expect(e.code).toBe('not_found');
    expect(e.message).toBe('No such turn');
    expect(e.details).toEqual({ turnId: 't1' });
  });

  it('defaults the message to the code and leaves details out', () => {
    const e = new DomainError('rate_limited');
    expect(e.message).toBe('rate_limited');
    expect('details' in e).toBe(false);
  });

  it('lists the API codes once', () => {
    expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
    expect(ERROR_CODES).toEqual(
      expect.arrayContaining([
        'unauthorized',
        'skill_rejected',
        'invalid_transition',
        'invariant_violated',
        'rate_limited',
      ]),
    );
    expect(isErrorCode('turn_paused')).toBe(true);
    expect(isErrorCode('teapot')).toBe(false);
  });

  it('isDomainError narrows by class and optionally by code', () => {
    const e = new DomainError('forbidden');
    expect(isDomainError(e)).toBe(true);
    expect(isDomainError(e, 'forbidden')).toBe(true);
    expect(isDomainError(e, 'not_found')).toBe(false);
    expect(isDomainError(new Error('forbidden'))).toBe(false);
    expect(isDomainError({ code: 'forbidden' })).toBe(false);
  });
});
