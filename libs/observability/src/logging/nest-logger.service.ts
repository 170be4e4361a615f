import type { LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

/**
 * Nest's LoggerService over pino, so every `new Logger(context)` of the apps writes JSON lines:
 * `context` is the Nest context, `msg` the message, `stack` an error's stack.
 */
export class NestPinoLogger implements LoggerService {
  constructor(readonly pino: Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  /** Nest passes the context last, and for `error` the stack before it. */
  private write(level: Level, message: unknown, params: unknown[]): void {
    const rest = [...params];
    const context = rest.length > 0 && typeof rest.at(-1) === 'string' ? (rest.pop() as string) : undefined;
    const stack = level === 'error' && typeof rest[0] === 'string' ? rest[0] : undefined;
    if (message instanceof Error) {
      this.pino[level]({ context, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.pino[level]({ context, ...message });
    } else {
      this.pino[level]({ context, stack }, String(message));
    }
  }
}
