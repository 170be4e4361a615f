export * from './queues';
export * from './events';
export * from './config.util';
