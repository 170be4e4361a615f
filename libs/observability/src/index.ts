export * from './tracing/tracing-config.util';
export * from './tracing/tracing-sdk.util';
export * from './tracing/spans.util';
export * from './logging/logger.util';
export * from './logging/nest-logger.service';
export * from './metrics/portal-metrics.service';
export * from './metrics/model-call.util';
