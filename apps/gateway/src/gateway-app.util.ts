import fastifyMultipart from '@fastify/multipart';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { LoggerService, LogLevel } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { AppModule } from './app.module';
import type { GatewayConfig } from './config';
import { OPENAPI_DOCUMENT } from './docs/openapi.document';
import { MetricsService } from './metrics/metrics.service';

/** Request bodies above this answer 413 `too_large`. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * The gateway app, configured but not listening: `listen` runs the bootstrap file first
 * (BootstrapService runs at init). Shared by main and the tests.
 */
export async function createGatewayApp(
  config: GatewayConfig,
  options: { logger?: LoggerService | LogLevel[] | false } = {},
): Promise<NestFastifyApplication> {
  const app = await NestFactory.create<NestFastifyApplication>(
    AppModule.forRoot(config),
    new FastifyAdapter({ bodyLimit: BODY_LIMIT_BYTES }),
    // Throw instead of exiting, so main reports the cause in one line and tests see the error.
    { logger: options.logger, abortOnError: false, bodyParser: false },
  );
  const fastify = app.getHttpAdapter().getInstance();
  acceptJsonOnly(fastify);
  const metrics = app.get(MetricsService);
  fastify.addHook('onResponse', async (request, reply) => {
    metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode);
  });
  // Uploads (POST /v1/attachments); the attachments service streams the file with its own cap.
  await app.register(fastifyMultipart);
  // The plugin's types know OpenAPI 2 and 3.0 documents only; it serves a 3.1 one as it is.
  await app.register(fastifySwagger, {
    mode: 'static',
    specification: { document: OPENAPI_DOCUMENT as never },
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs', staticCSP: true });
  return app;
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
