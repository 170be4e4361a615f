export * from './fake-openai';
export * from './database.util';
export * from './e2e';
