export * from './tracing';
export * from './logging/logger.util';
export * from './logging/nest-logger.service';
export * from './metrics/portal-metrics.service';
export * from './metrics/model-call.util';
export * from './health/health.server';
