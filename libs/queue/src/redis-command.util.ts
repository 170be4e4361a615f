import { connect } from 'node:net';

/** Room for the reply lines before a value (`+OK`, `$<length>`); longer lines are not Redis'. */
const LINE_BYTES = 4096;

/** What one Redis command answered: a simple string, an integer, a bulk string, or nil. */
export type RedisReply = string | number | Buffer | null;

/** Whether redisCommand can talk to this Redis: plain `redis://` (TLS is not spoken here). */
export function redisCommandTakes(url: string): boolean {
  return URL.canParse(url) && new URL(url).protocol === 'redis:';
}

/**
 * One Redis command on a connection opened for it (with the URL's password and database) and
 * closed once it is answered, with large values neither copied nor pooled: a Buffer argument is
 * written to the socket as it is, and a bulk reply is read from the socket straight into a buffer
 * of its size. ioredis copies every command with a Buffer into one buffer, and copies a reply
 * longer than a socket read into a pool three times its length, answering a slice of that pool:
 * a 25 MB upload held 75 MB while it was read, and 100 MB passed through the process.
 * Rejects on an error reply, an array reply, a connection that ends first, or `timeoutMs` without
 * a byte from Redis. Only URLs that redisCommandTakes.
 */
export async function redisCommand(
  url: string,
  command: (string | Buffer)[],
  timeoutMs: number,
): Promise<RedisReply> {
  if (!redisCommandTakes(url)) throw new Error('redisCommand takes redis:// URLs only');
  const target = new URL(url);
  const setup: string[][] = [];
  const password = decodeURIComponent(target.password);
  if (password) {
    const username = decodeURIComponent(target.username);
    setup.push(username ? ['AUTH', username, password] : ['AUTH', password]);
  }
  const db = target.pathname.replace(/^\//, '');
  if (db && db !== '0') setup.push(['SELECT', db]);

  return new Promise((resolve, reject) => {
    const lines = Buffer.allocUnsafe(LINE_BYTES);
    let filled = 0;
    let okLeft = setup.length; // replies to AUTH and SELECT, each `+OK`
    let value: Buffer | null = null; // a bulk reply and its CRLF, once its length is known
    let received = 0;
    let settled = false;
    const end = (err: Error | null, reply: RedisReply = null) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err) reject(err);
      else resolve(reply);
    };
    const valueIn = (bytes: Buffer) => {
      const length = bytes.length - 2;
      if (bytes[length] === 0x0d && bytes[length + 1] === 0x0a) end(null, bytes.subarray(0, length));
      else end(new Error('Redis: a value does not end its reply'));
    };
    /** Reads the reply lines in so far, up to the command's reply (or its value's length). */
    const readLines = (): void => {
      let at = 0;
      for (;;) {
        const eol = lines.subarray(0, filled).indexOf('\r\n', at);
        if (eol < 0) break;
        const line = lines.toString('latin1', at, eol);
        at = eol + 2;
        if (line.startsWith('-')) return end(new Error(`Redis: ${line.slice(1)}`));
        if (okLeft > 0) {
          if (!line.startsWith('+')) return end(new Error(`Redis: unexpected reply ${quote(line)}`));
          okLeft--;
          continue;
        }
        if (line.startsWith('+')) return end(null, line.slice(1));
        if (line.startsWith(':')) return end(null, Number(line.slice(1)));
        const length = line.startsWith('$') ? Number(line.slice(1)) : NaN;
        if (length === -1) return end(null, null);
        if (!Number.isSafeInteger(length) || length < 0) {
          return end(new Error(`Redis: a reply this client does not read: ${quote(line)}`));
        }
        // Never from Node's shared pool, so the value holds no memory but its own.
        value = Buffer.allocUnsafeSlow(length + 2);
        received = lines.copy(value, 0, at, Math.min(filled, at + value.length));
        if (received === value.length) valueIn(value);
        return;
      }
      lines.copy(lines, 0, at, filled);
      filled -= at;
      if (filled === LINE_BYTES) end(new Error('Redis: a reply line is too long'));
    };

    const socket = connect({
      host: target.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(target.port || 6379),
      onread: {
        // Where the next read goes: the lines until a value's length is known, then the value itself.
        buffer: () => (settled ? lines : value ? value.subarray(received) : lines.subarray(filled)),
        callback: (n: number) => {
          if (settled) return true;
          try {
            if (value) {
              received += n;
              if (received === value.length) valueIn(value);
            } else {
              filled += n;
              readLines();
            }
          } catch (err) {
            end(err as Error); // a length no buffer can hold
          }
          return true; // false would pause the socket
        },
      },
    });
    socket.setTimeout(timeoutMs, () => end(new Error(`Redis was silent for ${timeoutMs} ms`)));
    socket.on('error', (err) => end(err));
    socket.on('close', () => end(new Error('Redis closed the connection before the reply ended')));
    // Written in one go (writev), each Buffer as it is. Not end(): Redis may drop the replies to a
    // client that has half-closed.
    socket.cork();
    for (const args of [...setup, command]) {
      socket.write(`*${args.length}\r\n`);
      for (const arg of args) {
        socket.write(`$${Buffer.byteLength(arg)}\r\n`);
        socket.write(arg);
        socket.write('\r\n');
      }
    }
    socket.uncork();
  });
}

function quote(line: string): string {
  return JSON.stringify(line.slice(0, 40));
}
