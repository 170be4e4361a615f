import { ConfigError } from '@portal/domain';
import { DEFAULT_LIMITS, limitsFromEnv, resolveLimits, SCREEN_LIMITS } from './limits';

describe('limits', () => {
  it('holds every number of the spec', () => {
    expect(DEFAULT_LIMITS).toEqual({
      TURNS_REPLAYED: 20,
      CALLS_PER_TURN: 8,
      TOOL_OUTPUT_TURNS: 3,
      RESULT_PREVIEW_CHARS: 400,
      ARG_STRING_CHARS: 200,
      INLINE_DOC_CHARS: 6000,
      INLINE_REPLAY_CHARS: 24000,
      PICTURE_MESSAGES: 3,
      HEADINGS: 20,
      MAX_CALLS_PER_TURN: 25,
      COMPACT_AT: 0.85,
      TAIL_MESSAGES: 4,
      SUMMARY_REQUESTS_SHARE: 0.25,
      SUMMARY_OUTPUT_SHARE: 0.25,
      SUMMARY_LANGUAGE_PARAGRAPHS: 8,
      SUMMARY_PARAGRAPH_CHARS: 400,
      SHORTENED_REQUEST_CHARS: 200,
    });
  });

  it('holds the screen numbers of section 9: 0.6 s behind, 40 characters a second, 300 ms, clock after 3 s', () => {
    expect(SCREEN_LIMITS).toEqual({
      PLAYOUT_LAG_MS: 600,
      PLAYOUT_MIN_CHARS_PER_SECOND: 40,
      PLAYOUT_EASE_MS: 300,
      COMPACTION_CLOCK_AFTER_MS: 3000,
    });
  });

  it('applies overrides and freezes the result', () => {
    const limits = resolveLimits({ TURNS_REPLAYED: 5, COMPACT_AT: 0.5 });
    expect(limits).toEqual({ ...DEFAULT_LIMITS, TURNS_REPLAYED: 5, COMPACT_AT: 0.5 });
    expect(Object.isFrozen(limits)).toBe(true);
    expect(resolveLimits()).toEqual(DEFAULT_LIMITS);
  });

  it.each<[string, Record<string, number>, RegExp]>([
    ['a fraction for a count', { CALLS_PER_TURN: 2.5 }, /CALLS_PER_TURN must be a whole number/],
    ['a negative count', { HEADINGS: -1 }, /HEADINGS must be a whole number/],
    ['zero calls per turn', { MAX_CALLS_PER_TURN: 0 }, /MAX_CALLS_PER_TURN must be at least 1/],
    ['a share above 1', { COMPACT_AT: 1.5 }, /COMPACT_AT must be a share/],
    ['a share of 0', { SUMMARY_REQUESTS_SHARE: 0 }, /SUMMARY_REQUESTS_SHARE must be a share/],
    ['an unknown name', { TURNS: 3 }, /TURNS is not a limit/],
    ['infinity', { INLINE_DOC_CHARS: Infinity }, /INLINE_DOC_CHARS must be a finite number/],
  ])('refuses %s, naming it', (_, overrides, message) => {
    expect(() => resolveLimits(overrides)).toThrow(ConfigError);
    expect(() => resolveLimits(overrides)).toThrow(message);
  });
});

describe('limitsFromEnv', () => {
  it('reads PORTAL_LIMIT_<NAME> and ignores everything else', () => {
    const limits = limitsFromEnv({
      PORTAL_LIMIT_TURNS_REPLAYED: '30',
      PORTAL_LIMIT_COMPACT_AT: ' 0.9 ',
      PORTAL_LIMIT_HEADINGS: '',
      HOME: '/root',
    });
    expect(limits).toEqual({ ...DEFAULT_LIMITS, TURNS_REPLAYED: 30, COMPACT_AT: 0.9 });
  });

  it.each([
    ['PORTAL_LIMIT_TURNS_REPLAYED', 'twenty'],
    ['PORTAL_LIMIT_TURNS_REPLAYED', '-3'],
    ['PORTAL_LIMIT_TURNS_REPLAYED', '0x10'],
    ['PORTAL_LIMIT_CALLS_PER_TURN', '2.5'],
    ['PORTAL_LIMIT_COMPACT_AT', '85'],
    ['PORTAL_LIMIT_TURN_REPLAYED', '5'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => limitsFromEnv({ [name]: value })).toThrow(new RegExp(`^Invalid configuration: ${name} `));
  });
});
