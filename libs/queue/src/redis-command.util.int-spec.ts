import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Server } from 'node:net';
import IORedis from 'ioredis';
import { readCommonConfig } from '@portal/contracts';
import { redisCommand, redisCommandTakes } from './redis-command.util';

const redisUrl = readCommonConfig(process.env).redisUrl;
const prefix = `redis-command-spec:${randomBytes(4).toString('hex')}`;
const redis = new IORedis(redisUrl);

/** A local TCP server that answers each connection with `reply` (or nothing). */
async function fakeRedis(
  reply: (socket: import('node:net').Socket) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer(reply);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `redis://127.0.0.1:${port}`, server };
}

async function freePort(): Promise<number> {
  const { server } = await fakeRedis((s) => s.destroy());
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const get = (url: string, key: string, timeoutMs = 5_000) => redisCommand(url, ['GET', key], timeoutMs);

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

describe('redisCommand', () => {
  it.each([0, 1, 4093, 4094, 4095, 4096, 65_543, 5_000_000])(
    'reads a GET of %i bytes exactly, into a buffer of its own size',
    async (size) => {
      const value = randomBytes(size);
      await redis.set(`${prefix}:v${size}`, value);
      const read = (await get(redisUrl, `${prefix}:v${size}`)) as Buffer;
      expect(read.equals(value)).toBe(true);
      // The value and its reply's CRLF: nothing of the size of a pool, nothing shared.
      expect(read.buffer.byteLength).toBe(size + 2);
    },
  );

  it('writes a SET with a Buffer exactly, and answers its simple string and integers', async () => {
    const value = randomBytes(3_000_000);
    const key = `${prefix}:set`;
    expect(await redisCommand(redisUrl, ['SET', key, value, 'PX', '60000'], 5_000)).toBe('OK');
    expect((await redis.getBuffer(key))?.equals(value)).toBe(true);
    expect(await redis.pttl(key)).toBeGreaterThan(50_000);
    expect(await redisCommand(redisUrl, ['STRLEN', key], 5_000)).toBe(3_000_000);
    expect(await redisCommand(redisUrl, ['SET', key, Buffer.alloc(0)], 5_000)).toBe('OK');
    expect(await redis.getBuffer(key)).toEqual(Buffer.alloc(0));
  });

  it('answers null for a missing key', async () => {
    expect(await get(redisUrl, `${prefix}:missing`)).toBeNull();
  });

  it("rejects with Redis' error, and on a reply it does not read (an array)", async () => {
    await redis.rpush(`${prefix}:list`, 'a');
    await expect(get(redisUrl, `${prefix}:list`)).rejects.toThrow(/WRONGTYPE/);
    await expect(redisCommand(redisUrl, ['LRANGE', `${prefix}:list`, '0', '-1'], 5_000)).rejects.toThrow(
      /does not read/,
    );
  });

  it("reads from the URL's database", async () => {
    const other = new IORedis(`${redisUrl}/7`);
    try {
      await other.set(`${prefix}:db7`, 'seven', 'EX', 60);
      expect(await get(`${redisUrl}/7`, `${prefix}:db7`)).toEqual(Buffer.from('seven'));
      expect(await get(redisUrl, `${prefix}:db7`)).toBeNull();
    } finally {
      await other.del(`${prefix}:db7`);
      other.disconnect();
    }
  });

  it('reads a reply that comes a byte at a time', async () => {
    const { url, server } = await fakeRedis((socket) => {
      socket.once('data', async () => {
        for (const byte of Buffer.from('$12\r\nhello\r\nworld\r\n')) {
          socket.write(Buffer.from([byte]));
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      });
    });
    try {
      expect(await get(url, 'k')).toEqual(Buffer.from('hello\r\nworld'));
    } finally {
      server.close();
    }
  });

  it('rejects when Redis closes before the value is in, frames it wrongly, stays silent or is not there', async () => {
    const cut = await fakeRedis((socket) => socket.once('data', () => socket.end('$10\r\nhalf')));
    const silent = await fakeRedis(() => undefined);
    const misframed = await fakeRedis((socket) => socket.once('data', () => socket.write('$2\r\nabc\r\n')));
    try {
      await expect(get(cut.url, 'k')).rejects.toThrow(/closed the connection/);
      await expect(get(misframed.url, 'k')).rejects.toThrow(/a value does not end its reply/);
      await expect(get(silent.url, 'k', 200)).rejects.toThrow(/silent for 200 ms/);
      await expect(get(`redis://127.0.0.1:${await freePort()}`, 'k')).rejects.toThrow(/ECONNREFUSED/);
      await expect(get('rediss://127.0.0.1:6379', 'k')).rejects.toThrow(/redis:\/\//);
      expect(['redis://h', 'redis://:p@h:1/2', 'REDIS://h'].map(redisCommandTakes)).toEqual([
        true,
        true,
        true,
      ]);
      expect(['rediss://h', 'h:6379', '127.0.0.1:6379', ''].map(redisCommandTakes)).toEqual([
        false,
        false,
        false,
        false,
      ]);
    } finally {
      cut.server.close();
      silent.server.close();
      misframed.server.close();
    }
  });

  describe('on a Redis with a password', () => {
    let server: ChildProcess;
    let port: number;

    beforeAll(async () => {
      port = await freePort();
      server = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--appendonly',
          'no',
          '--requirepass',
          's3cret',
        ],
        { stdio: 'ignore' },
      );
      for (let tries = 0; ; tries++) {
        const up = await new Promise<boolean>((resolve) => {
          const socket = createConnection({ port, host: '127.0.0.1' });
          socket.once('connect', () => (socket.destroy(), resolve(true)));
          socket.once('error', () => resolve(false));
        });
        if (up) break;
        if (tries > 200) throw new Error('redis-server did not start');
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      const admin = new IORedis(`redis://:s3cret@127.0.0.1:${port}`);
      await admin.set('k', 'guarded');
      await admin.call('ACL', 'SETUSER', 'reader', 'on', '>p@ss/word', '~*', '+get');
      admin.disconnect();
    });
    afterAll(() => server.kill('SIGKILL'));

    it("authenticates with the URL's password, or user and password", async () => {
      expect(await get(`redis://:s3cret@127.0.0.1:${port}`, 'k')).toEqual(Buffer.from('guarded'));
      expect(await get(`redis://reader:p%40ss%2Fword@127.0.0.1:${port}/0`, 'k')).toEqual(
        Buffer.from('guarded'),
      );
    });

    it('rejects a wrong password or none', async () => {
      await expect(get(`redis://:wrong@127.0.0.1:${port}`, 'k')).rejects.toThrow(/WRONGPASS/);
      await expect(get(`redis://127.0.0.1:${port}`, 'k')).rejects.toThrow(/NOAUTH/);
    });
  });
});
