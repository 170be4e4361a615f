import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from './api-error.util';
import { REFUSED_BODY_READ_BYTES } from './body-limits';

/** Every error of every route (and Fastify's own: bad JSON, body too large, no route) as `{ error }`. */
@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiErrorFilter');

  catch(err: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const { status, body } = toApiError(err);
    if (status >= 500) {
      this.logger.error(`${request.method} ${request.url}: ${(err as Error)?.stack ?? String(err)}`);
    }
    if (reply.sent || reply.raw.headersSent) return;
    if (status === 503) void reply.header('retry-after', '1');
    // Fastify refuses a body declared over the limit before reading it and asks for the connection
    // to close, so a client still sending meets a reset (EPIPE) instead of this answer. Up to
    // REFUSED_BODY_READ_BYTES it stays open: Node reads the rest and drops it.
    if (status === 413 && Number(request.headers['content-length']) <= REFUSED_BODY_READ_BYTES) {
      void reply.removeHeader('connection');
    }
    void reply.status(status).send(body);
  }
}
