import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as OTLP/JSON carries it, flattened: its service and its attributes as plain values. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Empty for a trace's root. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

export interface OtlpReceiver {
  /** What to give OTEL_EXPORTER_OTLP_ENDPOINT (the exporters add `/v1/traces`). */
  endpoint: string;
  spans: ReceivedSpan[];
  /** The content types of the exports received, e.g. to see which protocol a service used. */
  contentTypes: string[];
  /** Resolves once `test` holds for the spans received so far. */
  waitFor(test: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type AnyValue = {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };

function plain(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(plain);
  return undefined;
}

const attributesOf = (list: KeyValue[] = []) =>
  Object.fromEntries(list.map(({ key, value }) => [key, plain(value)]));

/**
 * An OpenTelemetry collector's OTLP/HTTP trace endpoint in the test process: decodes `http/json`
 * exports (POST /v1/traces) into `spans`. A `http/protobuf` export is answered and its content
 * type noted, its spans not decoded.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      if (req.url === '/v1/traces' && type.includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                service,
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId ?? '',
                name: span.name,
                kind: span.kind,
                attributes: attributesOf(span.attributes),
                links: (span.links ?? []).map((l: ReceivedSpan['links'][number]) => ({
                  traceId: l.traceId,
                  spanId: l.spanId,
                })),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': type.includes('json') ? 'application/json' : type });
      res.end(type.includes('json') ? '{}' : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    async waitFor(test, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (!test(spans)) {
        if (Date.now() > deadline) {
          throw new Error(
            `spans not received within ${timeoutMs} ms: ${spans.map((s) => s.name).join(', ')}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return spans;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
