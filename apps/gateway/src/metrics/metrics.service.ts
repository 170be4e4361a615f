import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Registry } from 'prom-client';
import type { TurnKind } from '@portal/domain';
import { collectProcessMetrics, GATEWAY_METRIC } from '@portal/observability';

/** The gateway's Prometheus metrics, on a registry of its own (several apps may share a process in tests). */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  private readonly httpRequests = new Counter({
    name: GATEWAY_METRIC.httpRequests,
    help: 'HTTP requests answered, by route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  private readonly sseConnections = new Gauge({
    name: GATEWAY_METRIC.sseConnections,
    help: 'Open Server-Sent Events streams',
    registers: [this.registry],
  });

  private readonly sseDrops = new Counter({
    name: GATEWAY_METRIC.sseDropped,
    help: 'Server-Sent Events streams dropped because their client left too much unread',
    registers: [this.registry],
  });

  private readonly turnsOpened = new Counter({
    name: GATEWAY_METRIC.turnsOpened,
    help: 'Turns opened by the gateway, by kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectProcessMetrics(this.registry, 'portal_gateway_');
  }

  httpRequest(method: string, route: string, status: number): void {
    this.httpRequests.inc({ method, route, status: String(status) });
  }

  sseOpened(): void {
    this.sseConnections.inc();
  }

  sseClosed(): void {
    this.sseConnections.dec();
  }

  sseDropped(): void {
    this.sseDrops.inc();
  }

  turnOpened(kind: TurnKind): void {
    this.turnsOpened.inc({ kind });
  }
}
