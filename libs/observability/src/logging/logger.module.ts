import { Module, RequestMethod, type DynamicModule, type Type } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Logger } from 'pino';
import type { Options } from 'pino-http';

/** pino-http's options for an app's request lines; the logger is the one given to `withLogger`. */
export type RequestLogOptions = Omit<Options, 'logger'>;

@Module({})
class LoggedAppModule {}

/**
 * `module` with nestjs-pino over `log` (a `createLogger` logger, so its format, redaction and job
 * ids hold): after `app.useLogger(app.get(Logger))` (nestjs-pino's `Logger`) Nest's own lines and
 * every `new Logger(context)` are JSON lines with `context`. With `requests`, pino-http logs each
 * HTTP request as those options say and binds `reqId` to the lines logged while it is handled;
 * fields given to `PinoLogger.assign` reach the request's own line too (`assignResponse`).
 *
 * nestjs-pino keeps one root logger per process: the first app created in a process sets it.
 */
export function withLogger(
  module: Type<unknown> | DynamicModule,
  log: Logger,
  requests: RequestLogOptions = { autoLogging: false },
): DynamicModule {
  const logger = LoggerModule.forRoot({
    pinoHttp: { ...requests, logger: log },
    // nestjs-pino's default, `{/*splat}`, reaches @fastify/middie 9.3 as `/{/*splat}`, which
    // matches `//…` only: no request would get a logger or a line.
    forRoutes: [{ path: '/{*splat}', method: RequestMethod.ALL }],
    assignResponse: true,
  });
  return { module: LoggedAppModule, imports: [logger, module] };
}
