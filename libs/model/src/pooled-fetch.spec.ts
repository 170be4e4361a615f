import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { pooledFetch } from './pooled-fetch';

/** A server that records each request and answers by path. */
const seen: { method: string; headers: http.IncomingHttpHeaders; body: string }[] = [];
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    seen.push({ method: req.method!, headers: req.headers, body });
    if (req.url === '/empty') return res.writeHead(204).end();
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: first\n\n');
      return; // never ends: the client aborts
    }
    res.writeHead(201, [
      ['content-type', 'application/json'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
    ]);
    res.end(JSON.stringify({ echoed: body }));
  });
});

let base: string;
const pool = new Agent();
const fetchVia = pooledFetch(pool);

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await pool.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => (seen.length = 0));

describe('pooledFetch', () => {
  it('sends the method, headers and body, and answers with status, headers and body', async () => {
    const res = await fetchVia(new URL('/chat', base), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
      body: '{"q":1}',
    });

    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ echoed: '{"q":1}' });
    expect(seen).toEqual([
      expect.objectContaining({
        method: 'POST',
        body: '{"q":1}',
        headers: expect.objectContaining({ authorization: 'Bearer k' }),
      }),
    ]);
  });

  it.each([
    [
      'a Headers',
      new Headers([
        ['x-a', '1'],
        ['x-b', '2'],
      ]),
    ],
    [
      'pairs',
      [
        ['x-a', '1'],
        ['x-b', '2'],
      ] as [string, string][],
    ],
  ])('sends headers given as %s', async (_, headers) => {
    await fetchVia(`${base}/chat`, { method: 'POST', headers, body: '{}' });

    expect(seen[0].headers).toEqual(expect.objectContaining({ 'x-a': '1', 'x-b': '2' }));
  });

  it('answers a bodiless status with no body', async () => {
    const res = await fetchVia(`${base}/empty`, { method: 'DELETE' });

    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
  });

  it('fails the body being read when the request is aborted', async () => {
    const controller = new AbortController();
    const res = await fetchVia(`${base}/slow`, { method: 'POST', body: '{}', signal: controller.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');

    controller.abort();

    await expect(reader.read()).rejects.toThrow();
  });

  it('refuses a request whose signal has already aborted', async () => {
    await expect(
      fetchVia(`${base}/chat`, { method: 'POST', body: '{}', signal: AbortSignal.abort() }),
    ).rejects.toThrow();
    expect(seen).toEqual([]);
  });

  it('hands a Request to the global fetch, its method and body with it', async () => {
    const res = await fetchVia(new Request(`${base}/chat`, { method: 'PUT', body: 'whole' }));

    expect(await res.json()).toEqual({ echoed: 'whole' });
    expect(seen).toEqual([expect.objectContaining({ method: 'PUT', body: 'whole' })]);
  });

  it('hands a streamed body to the global fetch', async () => {
    const body = new Blob(['streamed']).stream();
    const res = await fetchVia(`${base}/chat`, { method: 'POST', body, duplex: 'half' } as RequestInit);

    expect(await res.json()).toEqual({ echoed: 'streamed' });
  });
});
