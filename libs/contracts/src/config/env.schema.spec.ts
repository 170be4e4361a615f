import { z } from 'zod';
import { ConfigError } from '@portal/domain';
import { readCommonConfig, redisTargetEnv } from './common.env';
import { envVar, envVarDocs, parseEnv } from './env.schema';

describe('readCommonConfig', () => {
  it('uses the documented defaults', () => {
    expect(readCommonConfig({})).toEqual({
      databaseUrl: 'postgres://postgres@127.0.0.1:5432/portal',
      databasePoolSize: 10,
      redis: { url: 'redis://127.0.0.1:6379' },
      prefix: 'portal',
      eventRetentionMs: 24 * 60 * 60 * 1000,
    });
  });

  it.each([
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'mysql://x/y'],
    ['DATABASE_POOL_SIZE', '0'],
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
    expect(readCommonConfig(redisTargetEnv(cluster)).redis).toEqual(cluster);
    expect(readCommonConfig(redisTargetEnv({ url: 'redis://x:1' })).redis).toEqual({ url: 'redis://x:1' });
  });
});

describe('envVar.int', () => {
  const schema = z.object({ PORT: envVar.int('port', 3000, { max: 65535 }) });

  it('reads whole numbers within range and names the variable otherwise', () => {
    expect(parseEnv(schema, { PORT: '8080' }).PORT).toBe(8080);
    expect(parseEnv(schema, {}).PORT).toBe(3000);
    expect(parseEnv(schema, { PORT: '' }).PORT).toBe(3000);
    expect(() => parseEnv(schema, { PORT: 'x' })).toThrow(ConfigError);
    expect(() => parseEnv(schema, { PORT: 'x' })).toThrow('PORT must be a whole number, got "x"');
    expect(() => parseEnv(schema, { PORT: '70000' })).toThrow(/PORT must be at most 65535/);
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

describe('envVar.urlPrefixes', () => {
  const schema = z.object({ ALLOW: envVar.urlPrefixes('prefixes') });

  it('reads comma-separated http(s) prefixes, none when unset', () => {
    expect(parseEnv(schema, {}).ALLOW).toEqual([]);
    expect(parseEnv(schema, { ALLOW: 'https://a.example/, http://b.example:8080/x' }).ALLOW).toEqual([
      'https://a.example/',
      'http://b.example:8080/x',
    ]);
    expect(() => parseEnv(schema, { ALLOW: 'https://a.example/,ftp://b.example/' })).toThrow(
      'ALLOW entries must be http(s) URL prefixes, got "ftp://b.example/"',
    );
  });
});

describe('envVarDocs', () => {
  it('lists each variable with what it does and its default as written', () => {
    const schema = z.object({
      A: envVar.duration('how long', '30s'),
      B: envVar.optional('a file'),
    });
    expect(envVarDocs(schema)).toEqual([
      ['A', { description: 'how long', default: '30s' }],
      ['B', { description: 'a file', default: undefined }],
    ]);
  });
});
