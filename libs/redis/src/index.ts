export * from './redis-connections';
export * from './redis.module';
export * from './conversation-events';
