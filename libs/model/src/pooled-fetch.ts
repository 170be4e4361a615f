import { Readable } from 'node:stream';
import { request, type Agent, type Dispatcher } from 'undici';

/**
 * The `fetch` the openai clients are given: undici's `request` on `pool`, its answer handed to
 * the SDK as the WHATWG Response it reads. Node's global fetch spends about 0.2 ms more CPU on
 * every model call building and tracking its Request and Response (docs/benchmarks.md, issue
 * #29). A Request, or a body the SDK streams (an upload), takes the global fetch: chat requests
 * are a URL and a string.
 */
export function pooledFetch(pool: Agent): typeof fetch {
  return async (input, init = {}) => {
    const { body } = init;
    const streamed = body != null && typeof body !== 'string' && !(body instanceof Uint8Array);
    if (streamed || input instanceof Request) return fetch(input, init);
    const answer = await request(String(input), {
      method: (init.method ?? 'GET') as Dispatcher.HttpMethod,
      headers: init.headers && headersOf(init.headers),
      body: body ?? undefined,
      signal: init.signal ?? undefined,
      dispatcher: pool,
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const each of value) headers.append(name, each);
      else if (value !== undefined) headers.set(name, value);
    }
    // A Response refuses a body for these statuses.
    if ([204, 205, 304].includes(answer.statusCode)) {
      answer.body.resume();
      return new Response(null, { status: answer.statusCode, headers });
    }
    return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, {
      status: answer.statusCode,
      headers,
    });
  };
}

/**
 * Request headers as undici takes them: any iterable of pairs, so a Headers goes as it is (Node's
 * is iterable; the DOM-less lib types this project compiles with do not declare it).
 */
function headersOf(init: HeadersInit): Iterable<[string, string]> {
  return (init instanceof Headers ? init : new Headers(init)) as unknown as Iterable<[string, string]>;
}
