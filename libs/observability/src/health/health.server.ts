import { createServer, type Server } from 'node:http';

export type ReadinessCheck = () => Promise<Record<string, boolean>>;

/** What `GET /metrics` answers: Prometheus text (PortalMetrics.scrape fits). */
export type MetricsScrape = () => Promise<{ contentType: string; body: string }>;

/**
 * `GET /health/live` and `GET /health/ready` on a port of the worker's own, and with `metrics`,
 * `GET /metrics` for Prometheus.
 */
export async function startHealthServer(
  port: number,
  ready: ReadinessCheck,
  metrics?: MetricsScrape,
): Promise<Server> {
  const server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET')
      return send(405, { error: { code: 'method_not_allowed', message: 'GET only' } });
    if (req.url === '/health/live') return send(200, { status: 'ok' });
    if (req.url === '/health/ready') {
      ready().then(
        (checks) => send(Object.values(checks).every(Boolean) ? 200 : 503, { status: 'checked', checks }),
        () => send(503, { status: 'error' }),
      );
      return;
    }
    if (req.url === '/metrics' && metrics) {
      metrics().then(
        ({ contentType, body }) => {
          res.writeHead(200, { 'content-type': contentType });
          res.end(body);
        },
        () => send(500, { error: { code: 'internal', message: 'metrics unavailable' } }),
      );
      return;
    }
    send(404, { error: { code: 'not_found', message: 'Not found' } });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve());
  });
  return server;
}
