import { ConfigError, envInt, readCommonConfig } from './config.util';

describe('readCommonConfig', () => {
  it('uses the documented defaults', () => {
    expect(readCommonConfig({})).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/portal',
      redisUrl: 'redis://127.0.0.1:6379',
      prefix: 'portal',
    });
  });

  it.each([
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://x/y'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['PORTAL_PREFIX', 'has:colon'],
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
