import type { ArgumentMetadata } from '@nestjs/common';
import { DomainError } from '@portal/domain';
import { frameworkError } from '../../src/common/api-error.util';
import { TextInputPipe, textInputProblem } from '../../src/common/text-input.pipe';
import { isStreamId } from '../../src/events/sse.service';

/** The input rules the request fuzzer (request-fuzz.e2e-spec.ts) called for, one by one. */
describe('TextInputPipe', () => {
  const pipe = new TextInputPipe();
  const body: ArgumentMetadata = { type: 'body' };
  const refused = (value: unknown, meta: ArgumentMetadata = body) => {
    try {
      pipe.transform(value, meta);
      return null;
    } catch (err) {
      expect(err).toBeInstanceOf(DomainError);
      return { code: (err as DomainError).code, message: (err as DomainError).message };
    }
  };

  it('refuses U+0000 and lone surrogates anywhere in a body, naming where', () => {
    expect(refused({ name: 'a\u0000b' })).toEqual({
      code: 'validation_failed',
      message: 'name: NUL characters (U+0000) are not accepted',
    });
    expect(refused({ tools: [{ parameters: { deep: ['ok', '\ud800'] } }] })).toEqual({
      code: 'validation_failed',
      message: 'tools[0].parameters.deep[1]: not well-formed Unicode (a lone surrogate)',
    });
    expect(refused({ 'key\u0000': 1 })?.message).toBe('key\u0000: NUL characters (U+0000) are not accepted');
    expect(refused('a\udfffb')?.message).toBe('body: not well-formed Unicode (a lone surrogate)');
  });

  it('refuses them in path parameters and the query', () => {
    expect(refused('x\u0000', { type: 'param', data: 'id' })?.message).toBe(
      'param id: NUL characters (U+0000) are not accepted',
    );
    expect(refused({ lastEventId: '\udbff' }, { type: 'query' })?.message).toBe(
      'query lastEventId: not well-formed Unicode (a lone surrogate)',
    );
  });

  it('lets every other text through untouched: RTL marks, joiners, NFD, Vietnamese, astral, noncharacters', () => {
    const value = {
      text: 'Tiếng Việt'.normalize('NFD') + '\u202e\u200d👩\u200d👩\u200d👧 𝔘 \uffff \u{10ffff}',
      list: ['', ' ', '\u2028'],
    };
    expect(pipe.transform(value, body)).toBe(value);
    expect(pipe.transform(undefined, body)).toBeUndefined();
  });

  it('walks a body nested 100,000 deep without recursion', () => {
    let deep: unknown = 'bottom\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(textInputProblem(deep)?.problem).toMatch(/NUL/);
  });

  it('leaves custom parameters (the raw request of an upload) alone', () => {
    const request = { headers: { x: 'a\u0000' } };
    expect(pipe.transform(request, { type: 'custom' })).toBe(request);
  });
});

describe('isStreamId', () => {
  it('takes what Redis takes as a stream id, and nothing past 2^64 - 1', () => {
    expect(isStreamId('0-0')).toBe(true);
    expect(isStreamId('1767225600000-12')).toBe(true);
    expect(isStreamId('18446744073709551615-18446744073709551615')).toBe(true);
    for (const bad of [
      '18446744073709551616-0',
      '1-18446744073709551616',
      '9'.repeat(30) + '-0',
      '1',
      '1-',
      '-1',
      '1-1-1',
      ' 1-1',
      '١-٢',
      '',
    ]) {
      expect([bad, isStreamId(bad)]).toEqual([bad, false]);
    }
  });
});

describe('frameworkError', () => {
  it("answers Fastify's own URL errors as 400 validation_failed in the API's shape", () => {
    expect(frameworkError(new Error("'/v1/agents/%ff' is not a valid url component"))).toEqual({
      status: 400,
      body: {
        error: {
          code: 'validation_failed',
          message: "The URL is not valid: '/v1/agents/%ff' is not a valid url component",
        },
      },
    });
  });
});
