export * from './portal.harness';
export * from './api.client';
