import { ConfigError, envInt, readCommonConfig } from './config.util';

describe('readCommonConfig', () => {
  it('uses the documented defaults', () => {
    expect(readCommonConfig({})).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/portal',
      redisUrl: 'redis://127.0.0.1:6379',
      prefix: 'portal',
      eventRetentionMs: 24 * 60 * 60 * 1000,
    });
  });

  it.each([
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://x/y'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['PORTAL_PREFIX', 'has:colon'],
    ['EVENT_RETENTION', 'forever'],
    ['EVENT_RETENTION', '10s'],
  ])('refuses a bad %s and names it', (name, value) => {
    expect(() => readCommonConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration: ${name} `));
  });
});

describe('envInt', () => {
  it('reads whole numbers within range and names the variable otherwise', () => {
    expect(envInt({ PORT: '8080' }, 'PORT', 3000)).toBe(8080);
    expect(envInt({}, 'PORT', 3000)).toBe(3000);
    expect(() => envInt({ PORT: 'x' }, 'PORT', 3000)).toThrow(ConfigError);
    expect(() => envInt({ PORT: '70000' }, 'PORT', 3000, { max: 65535 })).toThrow(
      /PORT must be at most 65535/,
    );
  });
});

describe('EVENT_RETENTION', () => {
  it.each([
    ['30m', 30 * 60_000],
    ['24h', 24 * 3_600_000],
    ['7d', 7 * 86_400_000],
    ['120000', 120_000],
  ])('reads %s', (value, ms) => {
    expect(readCommonConfig({ EVENT_RETENTION: value }).eventRetentionMs).toBe(ms);
  });
});
