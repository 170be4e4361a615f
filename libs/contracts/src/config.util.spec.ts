import { ConfigError, envInt, readCommonConfig, readRedisTarget, redisTargetEnv } from './config.util';

describe('readCommonConfig', () => {
  it('uses the documented defaults', () => {
    expect(readCommonConfig({})).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/portal',
      redis: { url: 'redis://127.0.0.1:6379' },
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
    ['REDIS_CLUSTER_NODES', '127.0.0.1'],
    ['REDIS_CLUSTER_NODES', '127.0.0.1:7000,,127.0.0.1:7001'],
    ['REDIS_CLUSTER_NODES', 'redis://127.0.0.1:7000'],
    ['REDIS_CLUSTER_NODES', '127.0.0.1:70000'],
  ])('refuses a bad %s and names it', (name, value) => {
    expect(() => readCommonConfig({ [name]: value })).toThrow(new RegExp(`^Invalid configuration: ${name} `));
  });
});

describe('Redis', () => {
  it('reads REDIS_CLUSTER_NODES as cluster mode, REDIS_URL then unread', () => {
    const env = { REDIS_URL: 'redis://10.0.0.9:6379', REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-b:7001 ' };
    expect(readCommonConfig(env).redis).toEqual({
      clusterNodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: 'redis-b', port: 7001 },
      ],
    });
  });

  it('reads REDIS_URL as one server when REDIS_CLUSTER_NODES is unset or empty', () => {
    expect(readCommonConfig({ REDIS_URL: 'redis://10.0.0.9:6380', REDIS_CLUSTER_NODES: '' }).redis).toEqual({
      url: 'redis://10.0.0.9:6380',
    });
  });

  it('writes back the variables it reads', () => {
    const cluster = {
      clusterNodes: [
        { host: 'a', port: 1 },
        { host: 'b', port: 2 },
      ],
    };
    expect(readRedisTarget(redisTargetEnv(cluster))).toEqual(cluster);
    expect(readRedisTarget(redisTargetEnv({ url: 'redis://x:1' }))).toEqual({ url: 'redis://x:1' });
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
