import { connect } from 'node:net';

/** Room for the reply lines before the value (`+OK`, `$<length>`); longer lines are not Redis'. */
const LINE_BYTES = 4096;

/**
 * Redis' GET of one string, read from the socket straight into a buffer of the value's size, on a
 * connection opened for it (with the URL's password and database) and closed once the value is in.
 * ioredis' parser copies a reply longer than a socket read into a pool three times its length
 * and answers a slice of that pool: a 25 MB upload held 75 MB while it was read, and 100 MB
 * passed through the process. Here the bytes are written once, where they stay.
 * Resolves null when the key is missing; rejects on any error reply, a reply that is not a string,
 * a connection that ends first, or `timeoutMs` without a byte from Redis. Plain `redis://` URLs only.
 */
export async function getRedisBytes(url: string, key: string, timeoutMs: number): Promise<Buffer | null> {
  const target = new URL(url);
  if (target.protocol !== 'redis:') {
    throw new Error(`getRedisBytes reads redis:// URLs, not ${target.protocol}`);
  }
  const commands: string[][] = [];
  const password = decodeURIComponent(target.password);
  if (password) {
    const username = decodeURIComponent(target.username);
    commands.push(username ? ['AUTH', username, password] : ['AUTH', password]);
  }
  const db = target.pathname.replace(/^\//, '');
  if (db && db !== '0') commands.push(['SELECT', db]);
  commands.push(['GET', key]);
  const request = commands
    .map((args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`)
    .join('');

  return new Promise((resolve, reject) => {
    const lines = Buffer.allocUnsafe(LINE_BYTES);
    let filled = 0;
    let okLeft = commands.length - 1; // replies before GET's, each `+OK`
    let value: Buffer | null = null; // the value and its CRLF, once its length is known
    let received = 0;
    let settled = false;
    const end = (err: Error | null, bytes: Buffer | null = null) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err) reject(err);
      else resolve(bytes);
    };
    const valueIn = (bytes: Buffer) => {
      const length = bytes.length - 2;
      if (bytes[length] === 0x0d && bytes[length + 1] === 0x0a) end(null, bytes.subarray(0, length));
      else end(new Error('Redis: the value does not end its reply'));
    };
    /** Reads the reply lines in so far, up to GET's length line. */
    const readLines = (): void => {
      let at = 0;
      for (;;) {
        const eol = lines.subarray(0, filled).indexOf('\r\n', at);
        if (eol < 0) break;
        const line = lines.toString('latin1', at, eol);
        at = eol + 2;
        if (line.startsWith('-')) {
          end(new Error(`Redis: ${line.slice(1)}`));
          return;
        }
        if (okLeft > 0) {
          if (!line.startsWith('+')) {
            end(new Error(`Redis: unexpected reply ${JSON.stringify(line.slice(0, 40))}`));
            return;
          }
          okLeft--;
          continue;
        }
        const length = line.startsWith('$') ? Number(line.slice(1)) : NaN;
        if (length === -1) {
          end(null, null);
          return;
        }
        if (!Number.isSafeInteger(length) || length < 0) {
          end(new Error(`Redis: GET answered ${JSON.stringify(line.slice(0, 40))}, not a string`));
          return;
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
        // Where the next read goes: the lines until GET's length is known, then the value itself.
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
    socket.setTimeout(timeoutMs, () => end(new Error(`Redis did not answer within ${timeoutMs} ms`)));
    socket.on('error', (err) => end(err));
    socket.on('close', () => end(new Error('Redis closed the connection before the reply ended')));
    // Not end(): Redis may drop the replies to a client that has half-closed.
    socket.write(request);
  });
}
