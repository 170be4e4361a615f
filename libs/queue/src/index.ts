export * from './job-options';
export * from './bullmq.client';
export * from './bullmq.context';
export * from './bullmq.server';
export * from './job-error.filter';
export * from './queue.module';
export * from './worker-boot';
