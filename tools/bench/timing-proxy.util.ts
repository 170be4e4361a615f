import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the proxy measured of a call. */
export interface ProxyClock {
  /** When the request arrived at the proxy, its body read (epoch ms, sub-ms precision). */
  arrivedAt: number;
  /** ms from the request's arrival at the proxy to the end of the fake's response through it. */
  ms: number;
  /** When the proxy passed on the first chunk with answer text (epoch ms, sub-ms precision). */
  firstTextAt: number | null;
}

/** A streamed chunk carrying a non-empty text delta. */
const TEXT_DELTA = /"content":"[^"]/;

export const epochMs = () => performance.timeOrigin + performance.now();

/**
 * An HTTP proxy in front of the fake model that times each call from its arrival to the end of the
 * fake's response, so a bench can subtract the model's own time from what the portal took.
 * `describe` reads the request body once and says what the call was.
 */
export async function startTimingProxy<T extends object>(
  target: string,
  describe: (body: Buffer) => T,
): Promise<{ url: string; timings: Array<T & ProxyClock>; server: Server }> {
  const upstream = new URL(target);
  const timings: Array<T & ProxyClock> = [];
  const server = createServer((req, res) => {
    const started = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const arrivedAt = epochMs();
      const body = Buffer.concat(chunks);
      const call = describe(body);
      const forward = httpRequest(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          let firstTextAt: number | null = null;
          up.on('data', (chunk: Buffer) => {
            if (firstTextAt === null && TEXT_DELTA.test(chunk.toString('utf8'))) firstTextAt = epochMs();
          });
          up.pipe(res);
          up.on('end', () =>
            timings.push({ ...call, arrivedAt, ms: performance.now() - started, firstTextAt }),
          );
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${upstream.pathname}`, timings, server };
}
