import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { runWithLogContext, type LogFields } from '@portal/observability';
import type { MetricsService } from '../metrics/metrics.service';

/**
 * What the gateway records of each request, when its response closes (so a stream the client left
 * counts too): its count in `metrics`, and its line on `log`: `request`, method, status and time,
 * with the request's id, its route and the route's ids, and the caller once the guard knows it
 * (`addLogContext`). Every line logged while the request is handled carries the same ids. Probes
 * and scrapes log at debug level. No headers or URL: a query may hold a person's search words.
 *
 * Register it before any other hook, so that a request refused by a later hook or by the body
 * parser is recorded with its route too.
 */
export function recordRequests(fastify: FastifyInstance, log: Logger, metrics: MetricsService): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    runWithLogContext({ reqId: request.id, ...routeIds(request, route) }, (fields) => {
      reply.raw.once('close', () => {
        const status = reply.raw.statusCode;
        metrics.httpRequest(request.method, route, status);
        const line = { ...fields, method: request.method, status, durationMs: Math.round(reply.elapsedTime) };
        if (isProbe(request)) log.debug(line, 'request');
        else log.info(line, 'request');
      });
      done();
    });
  });
}

/** The route (its pattern, `unmatched` when none) and, on a conversation's or a turn's route, that id. */
function routeIds(request: FastifyRequest, route: string): LogFields {
  const { id } = (request.params ?? {}) as { id?: string };
  return {
    route,
    conversationId: route.startsWith('/v1/conversations/:id') ? id : undefined,
    turnId: route.startsWith('/v1/turns/:id') ? id : undefined,
  };
}

/** By the path as it came, without its query. */
function isProbe(request: FastifyRequest): boolean {
  const path = request.url.split('?')[0];
  return path.startsWith('/health/') || path === '/metrics';
}
