export * from './logger.util';
export * from './nest-logger.service';
export * from './portal-metrics.service';
export * from './model-call.util';
