import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Logger } from 'pino';

@Module({})
class LoggedAppModule {}

/**
 * `module` with nestjs-pino over `log` (a `createLogger` logger, so its format, redaction and
 * context ids hold): after `app.useLogger(app.get(Logger))` (nestjs-pino's `Logger`) Nest's own
 * lines and every `new Logger(context)` are JSON lines with `context`, and a line logged inside
 * `runWithLogContext` carries its ids.
 *
 * No HTTP middleware: nestjs-pino's builds two child loggers per request with pino-http and a third
 * for each `PinoLogger.assign`, a fifth of a small request's CPU (docs/benchmarks.md). The gateway
 * logs its requests itself (`recordRequests`); the workers serve no HTTP through Nest.
 * nestjs-pino keeps one root logger per process: the first app created in a process sets it.
 */
export function withLogger(module: Type<unknown> | DynamicModule, log: Logger): DynamicModule {
  const logger = LoggerModule.forRoot({ pinoHttp: { logger: log, autoLogging: false }, forRoutes: [] });
  return { module: LoggedAppModule, imports: [logger, module] };
}
