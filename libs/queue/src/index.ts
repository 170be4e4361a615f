export * from './job-options';
export * from './job-handler.decorator';
export * from './queue.service';
export * from './queue.module';
export * from './health.server';
export * from './conversation-events';
export * from './worker-boot';
export * from './observability';
