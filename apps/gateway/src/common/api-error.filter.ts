import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { toApiError } from './api-error.util';

/** Every error of every route (and Fastify's own: bad JSON, body too large, no route) as `{ error }`. */
@Catch()
export class ApiErrorFilter implements ExceptionFilter {
  private readonly logger = new Logger('ApiErrorFilter');

  catch(err: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const { status, body } = toApiError(err);
    if (status >= 500) {
      const request = http.getRequest<FastifyRequest>();
      this.logger.error(`${request.method} ${request.url}: ${(err as Error)?.stack ?? String(err)}`);
    }
    if (reply.sent || reply.raw.headersSent) return;
    if (status === 503) void reply.header('retry-after', '1');
    void reply.status(status).send(body);
  }
}
