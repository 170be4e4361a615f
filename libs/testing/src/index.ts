export * from './fake-openai';
export * from './database.util';
export * from './e2e';
export * from './log-capture.util';
export * from './redis.util';
export * from './hostile';
export * from './chaos';
export * from './mcp';
