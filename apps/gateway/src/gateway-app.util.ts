import fastifyMultipart from '@fastify/multipart';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import type { Logger as Pino } from 'pino';
import { buildOpenApiDocument, QueueName } from '@portal/contracts';
import { BullMqClient } from '@portal/queue';
import { createLogger, PortalMetrics, withLogger } from '@portal/observability';
import { registerQueueBoard } from './admin/queue-board.util';
import { AppModule } from './app.module';
import { frameworkError } from './common/api-error.util';
import { BODY_LIMIT_BYTES } from './common/body-limits';
import { recordRequests } from './common/record-requests.util';
import type { GatewayConfig } from './config';
import { MetricsService } from './metrics/metrics.service';

/**
 * The gateway app, configured but not listening: `listen` runs the bootstrap file first
 * (BootstrapService runs at init). Shared by main and the tests. Logs are JSON lines on `log`
 * (default: a pino logger on stdout; silent when `logger` is false), Nest's own (nestjs-pino) and one
 * per request (recordRequests) included.
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
    withLogger(AppModule.forRoot(config), log),
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
  // The first hook: a request refused by any later one is recorded with its route.
  recordRequests(fastify, log, app.get(MetricsService));
  if (options.onRoute) fastify.addHook('onRoute', options.onRoute);
  acceptJsonOnly(fastify);
  const queues = app.get(BullMqClient);
  app.get(PortalMetrics).watchQueues(Object.values(QueueName).map((name) => queues.queue(name)));
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
