import type { ClientRequest, IncomingMessage } from 'node:http';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import type { Span } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { ATTR_URL_FULL, ATTR_URL_PATH, ATTR_URL_QUERY } from '@opentelemetry/semantic-conventions';
import type { Env } from '@portal/contracts';
import { readTracingConfig, type TracingConfig } from './tracing-config.util';

let sdk: NodeSDK | null = null;

/** True once `startTracing` started the SDK in this process. */
export function isTracing(): boolean {
  return sdk !== null;
}

/**
 * Starts OpenTelemetry for this process, when `config` turns it on: traces only (the metrics stay
 * Prometheus), exported over OTLP/HTTP. Call it before anything requires http, pg, ioredis or
 * pino, so the instrumentations can wrap them: each app's `tracing.ts`, imported first by main.ts.
 */
export function startTracing(config: TracingConfig): void {
  if (!config.enabled || sdk) return;
  sdk = new NodeSDK({
    serviceName: config.serviceName,
    traceExporter: config.protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter(),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: portalInstrumentations(),
    sampler: new tracing.ParentBasedSampler({ root: new SkipQueueHousekeeping() }),
  });
  sdk.start();
  // The spans of the last seconds go out as soon as the process is asked to stop, while the app
  // closes its own connections.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void sdk?.shutdown());
}

/** What an app's `tracing.ts` runs: tracing as OTEL_* asks, or the problem printed and exit. */
export function bootTracing(env: Env, serviceName: string): void {
  try {
    startTracing(readTracingConfig(env, serviceName));
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}

/**
 * What is recorded beyond our own spans. No attribute may carry a key, a prompt or a document's
 * words: no headers are recorded, query strings lose their values (`?q=` is a person's search),
 * SQL keeps its placeholders without the values, Redis commands their name only.
 */
function portalInstrumentations() {
  return [
    new HttpInstrumentation({
      ignoreIncomingRequestHook: (request) => isProbe(request.url),
      requestHook: (span, request) => redactQuery(span, request),
    }),
    new FastifyOtelInstrumentation({
      registerOnInitialization: true,
      ignorePaths: (route) => isProbe(route.url),
      requestHook: (span, request) => span.setAttribute(ATTR_URL_PATH, pathOf(request.url)),
    }),
    new PgInstrumentation({
      requireParentSpan: true,
      ignoreConnectSpans: true,
      enhancedDatabaseReporting: false,
    }),
    new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    // Log lines get trace_id and span_id; they stay on stdout, not sent as OTLP logs.
    new PinoInstrumentation({ disableLogSending: true }),
  ];
}

/**
 * BullMQ's own loops (polling for a job, checking for stalled ones, renewing locks) would each
 * start a trace every few seconds and bury the turns: those roots are dropped, and so are their
 * children. A `getNextJob` that fetched a job continues the job's trace and is kept.
 */
class SkipQueueHousekeeping implements tracing.Sampler {
  shouldSample(_context: unknown, _traceId: string, name: string): tracing.SamplingResult {
    return {
      decision: HOUSEKEEPING.test(name)
        ? tracing.SamplingDecision.NOT_RECORD
        : tracing.SamplingDecision.RECORD_AND_SAMPLED,
    };
  }

  toString(): string {
    return 'SkipQueueHousekeeping';
  }
}

const HOUSEKEEPING = /^(getNextJob|moveStalledJobsToWait|startStalledCheckTimer|extendLocks)\b/;

/** Health and metrics probes: every few seconds from the kubelet and Prometheus, no trace wanted. */
function isProbe(url: string | undefined): boolean {
  return /^\/(health|metrics)(\/|\?|$)/.test(url ?? '');
}

function pathOf(url: string | undefined): string {
  return (url ?? '').split('?')[0];
}

/** Keeps the names of the query's parameters, never their values. */
function redactQuery(span: Span, request: ClientRequest | IncomingMessage): void {
  const outgoing = 'path' in request;
  const url = outgoing ? request.path : request.url;
  const query = url?.split('?')[1];
  if (!query) return;
  const names = [...new URLSearchParams(query).keys()].map((name) => `${name}=REDACTED`).join('&');
  span.setAttribute(ATTR_URL_QUERY, names);
  if (outgoing)
    span.setAttribute(ATTR_URL_FULL, `${request.protocol}//${request.host}${pathOf(url)}?${names}`);
}
