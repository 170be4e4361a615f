import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { BullMQOtel } from 'bullmq-otel';
import { isTracing } from './tracing-sdk.util';

/** Our own spans' tracer; a no-op one until `startTracing` registered the SDK. */
const tracer = () => trace.getTracer('portal');
/** What `inSpan` hands `fn` with tracing off: records nothing. */
const UNTRACED = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export { SpanKind };

/** Span names of the portal's own work, one place for the names a trace search uses. */
export const SPAN = {
  promptAssemble: 'prompt.assemble',
  modelCall: 'model.call',
  toolCall: 'tool.call',
  compaction: 'compaction',
  /** One attachment read, whole; its steps below. */
  ingest: 'ingest',
  ingestPages: 'ingest.pages',
  ingestStore: 'ingest.store',
  ingestProbe: 'ingest.probe',
  ingestCopy: 'ingest.copy',
  eventsPublish: 'events.publish',
  /** The gateway writing events to an SSE client, linked to the spans that published them. */
  sseSend: 'sse.send',
} as const;

/**
 * Runs `fn` inside a new span (the active one while `fn` runs, so the queries and Redis commands
 * it makes are its children); the span ends with `fn`, its status an error when `fn` throws.
 * Attributes carry ids, names and counts only, never a prompt, a document's text or a key.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span) => T,
  kind: SpanKind = SpanKind.INTERNAL,
): T {
  // With tracing off a turn does no tracing work at all, not even a no-op span's.
  if (!isTracing()) return fn(UNTRACED);
  return tracer().startActiveSpan(name, { attributes, kind }, (span) => {
    let result: T;
    try {
      result = fn(span);
    } catch (err) {
      markFailed(span, err);
      span.end();
      throw err;
    }
    if (result instanceof Promise) {
      return result.then(
        (value) => {
          span.end();
          return value;
        },
        (err: unknown) => {
          markFailed(span, err);
          span.end();
          throw err;
        },
      ) as T;
    }
    span.end();
    return result;
  });
}

/** A span that the caller ends, e.g. one that lasts as long as a stream is read. */
export function startSpan(name: string, attributes: Attributes, links?: Link[]): Span {
  return tracer().startSpan(name, { attributes, links });
}

/** Marks `span` failed, with the error's message (ours carry ids, never a person's words). */
export function markFailed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message ?? String(err) });
}

/**
 * Reads `stream` with `span` active, so whatever the stream's producer does while it is read
 * (the model's HTTP request) belongs to that span. With tracing off, `stream` itself.
 */
export function readInSpan<T>(span: Span, stream: AsyncIterable<T>): AsyncIterable<T> {
  return isTracing() ? readActive(span, stream) : stream;
}

async function* readActive<T>(span: Span, stream: AsyncIterable<T>): AsyncGenerator<T, void, undefined> {
  const active = trace.setSpan(context.active(), span);
  const iterator = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await context.with(active, () => iterator.next());
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await iterator.return?.();
  }
}

/** The active span's W3C traceparent, to carry in a message; undefined when nothing is traced. */
export function traceparent(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier['traceparent'];
}

/** Links to the spans whose traceparents `carried` holds (each once), e.g. the events' publishers. */
export function linksTo(carried: Iterable<string | undefined>): Link[] {
  const links: Link[] = [];
  for (const parent of new Set(carried)) {
    if (!parent) continue;
    const spanContext = trace.getSpanContext(propagation.extract(context.active(), { traceparent: parent }));
    if (spanContext) links.push({ context: spanContext });
  }
  return links;
}

/**
 * BullMQ's `telemetry` option while tracing is on: a job carries its producer's trace context, so
 * the worker's `process` span continues the trace that added it. Undefined when tracing is off.
 */
export function queueTelemetry(): BullMQOtel | undefined {
  return isTracing() ? new BullMQOtel({ tracerName: 'bullmq' }) : undefined;
}
