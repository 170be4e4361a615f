export * from './redis-connections';
export * from './redis.module';
