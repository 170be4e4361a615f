export * from './tracing';
export * from './logging/logger.util';
export * from './logging/logger.module';
export * from './metrics/portal-metrics.service';
export * from './metrics/model-call.util';
export * from './health/health.server';
