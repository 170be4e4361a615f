import fastifyMultipart from '@fastify/multipart';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import helmet from 'helmet';
import { Logger, PinoLogger } from 'nestjs-pino';
import type { Logger as Pino } from 'pino';
import { buildOpenApiDocument, QueueName } from '@portal/contracts';
import { BullMqClient } from '@portal/queue';
import {
  createLogger,
  PortalMetrics,
  withLogger,
  type LogFields,
  type RequestLogOptions,
} from '@portal/observability';
import { registerQueueBoard } from './admin/queue-board.util';
import { AppModule } from './app.module';
import { frameworkError } from './common/api-error.util';
import { BODY_LIMIT_BYTES } from './common/body-limits';
import type { GatewayConfig } from './config';
import { MetricsService } from './metrics/metrics.service';

/**
 * The gateway app, configured but not listening: `listen` runs the bootstrap file first
 * (BootstrapService runs at init). Shared by main and the tests. Logs are JSON lines on `log`
 * (default: a pino logger on stdout; silent when `logger` is false), Nest's own and one per request
 * (nestjs-pino, pino-http) included.
 */
export async function createGatewayApp(
  config: GatewayConfig,
  options: {
    logger?: false;
    log?: Pino;
    /** Told of every route as Fastify registers it (the test that holds the OpenAPI document to them). */
    onRoute?: (route: RouteOptions) => void;
  } = {},
): Promise<NestFastifyApplication> {
  const log =
    options.log ??
    createLogger({ name: 'gateway', level: options.logger === false ? 'silent' : config.logLevel });
  const app = await NestFactory.create<NestFastifyApplication>(
    withLogger(AppModule.forRoot(config), log, REQUEST_LOG),
    new FastifyAdapter({
      bodyLimit: BODY_LIMIT_BYTES,
      frameworkErrors: (err: Error, _request: FastifyRequest, reply: FastifyReply) => {
        const { status, body } = frameworkError(err);
        void reply.status(status).send(body);
      },
    }),
    // Throw instead of exiting, so main reports the cause in one line and tests see the error.
    // Nest's lines wait for the JSON logger, which needs the app's injector.
    { bufferLogs: true, abortOnError: false, bodyParser: false },
  );
  app.useLogger(app.get(Logger));
  const fastify = app.getHttpAdapter().getInstance();
  if (options.onRoute) fastify.addHook('onRoute', options.onRoute);
  acceptJsonOnly(fastify);
  const metrics = app.get(MetricsService);
  const queues = app.get(BullMqClient);
  app.get(PortalMetrics).watchQueues(Object.values(QueueName).map((name) => queues.queue(name)));
  // The route and its ids on the request's lines and on its own line (the guard adds the caller),
  // from the first hook after nestjs-pino's: a request refused by a later hook or by the body parser
  // is logged with its route too.
  const requestLog = await app.resolve(PinoLogger);
  fastify.addHook('onRequest', (request, _reply, done) => {
    requestLog.assign(requestIds(request));
    done();
  });
  fastify.addHook('onResponse', async (request, reply) => {
    metrics.httpRequest(request.method, routeOf(request), reply.statusCode);
  });
  // helmet's middleware, built once: @fastify/helmet builds it again for every request, which cost
  // a sixth of the gateway's CPU for a small request (docs/benchmarks.md).
  const securityHeaders = helmet(SECURITY_HEADERS);
  fastify.addHook('onRequest', (request, reply, done) =>
    securityHeaders(request.raw, reply.raw, () => done()),
  );
  await registerQueueBoard(app, config);
  // Uploads (POST /v1/attachments); the attachments service streams the file with its own cap.
  await app.register(fastifyMultipart);
  // The plugin's types know OpenAPI 2 and 3.0 documents only; it serves a 3.1 one as it is.
  await app.register(fastifySwagger, {
    mode: 'static',
    specification: { document: buildOpenApiDocument() as never },
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs', staticCSP: true });
  return app;
}

/**
 * The security headers of every answer, the web client's included. The client loads its script and
 * styles from its own files (no inline script or style); pictures may be blob: URLs of fetched
 * attachment content. The docs UI sets its own policy on its routes (swagger-ui `staticCSP`).
 */
const SECURITY_HEADERS = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:', 'blob:'],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
  },
  frameguard: { action: 'deny' as const },
  referrerPolicy: { policy: 'no-referrer' as const },
};

/** The request's route pattern, as its log lines and metrics name it. */
function routeOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? 'unmatched';
}

/** The route and, on a conversation's or a turn's route, that id. */
function requestIds(request: FastifyRequest): LogFields {
  const route = routeOf(request);
  const { id } = (request.params ?? {}) as { id?: string };
  return {
    route,
    conversationId: route.startsWith('/v1/conversations/:id') ? id : undefined,
    turnId: route.startsWith('/v1/turns/:id') ? id : undefined,
  };
}

/**
 * One line per request (pino-http): `request`, method, status and time, with the reqId, route and
 * caller bound to it; probes and scrapes at debug level. No headers or URL: a query may hold a
 * person's search words.
 */
const REQUEST_LOG: RequestLogOptions = {
  quietReqLogger: true,
  quietResLogger: true,
  customLogLevel: (req) => (isProbe(req) ? 'debug' : 'info'),
  customSuccessMessage: () => 'request',
  customErrorMessage: () => 'request',
  customSuccessObject: requestLine,
  customErrorObject: (req, res, _err, value) => requestLine(req, res, value),
};

function requestLine(req: IncomingMessage, res: ServerResponse, value: { responseTime: number }) {
  return { method: req.method, status: res.statusCode, durationMs: value.responseTime };
}

/** By the path as it came: middleware may have shortened `url` (@fastify/middie keeps `originalUrl`). */
function isProbe(req: IncomingMessage & { originalUrl?: string }): boolean {
  const path = (req.originalUrl ?? req.url ?? '').split('?')[0];
  return path.startsWith('/health/') || path === '/metrics';
}

/**
 * Bodies are JSON (415 `unsupported_type` for anything else). An empty body reads as no body, so a
 * client that always sends `content-type: application/json` can POST cancel without one.
 */
function acceptJsonOnly(fastify: FastifyInstance): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body === '' ? done(null, undefined) : parseJson(request, String(body), done),
  );
}
