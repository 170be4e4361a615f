import { AsyncLocalStorage } from 'node:async_hooks';
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/** The ids a log line may carry. Ids only: never a key, a message's text or a document's. */
export interface LogFields {
  orgId?: string;
  userId?: string;
  conversationId?: string;
  turnId?: string;
  attachmentId?: string;
  queue?: string;
  jobId?: string;
  /** Gateway only: the request's id, on its own line and on every line logged while it is handled. */
  reqId?: string;
  /** Gateway only: the route's pattern (`/v1/turns/:id`), `unmatched` when none. */
  route?: string;
}

/**
 * Fields that may hold a secret or a person's words, removed from every structured log line
 * (top level and one level down). Messages are our own strings and carry ids only.
 */
export const REDACT_PATHS = [
  'authorization',
  'cookie',
  'apiKey',
  'text',
  'content',
  'pages',
  'documentText',
  '*.authorization',
  '*.cookie',
  '*.apiKey',
  '*.text',
  '*.content',
  '*.pages',
  '*.documentText',
  '*.headers.authorization',
  '*.headers.cookie',
];

const context = new AsyncLocalStorage<LogFields>();

export interface CreateLoggerOptions {
  /** The app: `name` on every line. */
  name: string;
  /** The app's LOG_LEVEL, default `info`; `silent` writes nothing. */
  level?: string;
  /** Where lines go; default stdout. Tests pass a stream to read them. */
  destination?: DestinationStream;
}

/**
 * A pino logger writing one JSON object per line: ISO time, level as a word, the app's name, the
 * ids of the job or request being handled (see `runWithLogContext`), secrets and texts redacted.
 * The ids come from a mixin, read only when a line is written: a context costs no child logger.
 */
export function createLogger(options: CreateLoggerOptions): Logger {
  const config: LoggerOptions = {
    name: options.name,
    level: options.level ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    mixin: () => ({ ...context.getStore() }),
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

/**
 * Runs `fn` with `fields` added to every line logged inside it, across awaits. `fn` gets the
 * context's ids, which `addLogContext` adds to, for a line logged after the context is left.
 */
export function runWithLogContext<T>(fields: LogFields, fn: (context: Readonly<LogFields>) => T): T {
  const store = { ...context.getStore(), ...definedOnly(fields) };
  return context.run(store, fn, store);
}

/**
 * Adds ids learnt midway (the conversation once read); outside `runWithLogContext` it does nothing,
 * so code a test calls directly logs as it would in a job.
 */
export function addLogContext(fields: LogFields): void {
  const store = context.getStore();
  if (store) Object.assign(store, definedOnly(fields));
}

/** A child of `logger` bound to `fields` (and to the current context's ids). */
export function logContext(logger: Logger, fields: LogFields): Logger {
  return logger.child(definedOnly(fields));
}

function definedOnly(fields: LogFields): LogFields {
  return Object.fromEntries(
    Object.entries(fields).filter(([, value]) => value !== undefined && value !== null),
  ) as LogFields;
}
