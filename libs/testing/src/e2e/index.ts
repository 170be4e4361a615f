export * from './portal.harness';
export * from './api.client';
export * from './event-stream';
export * from './portal.fixtures';
export * from './compaction.fixtures';
