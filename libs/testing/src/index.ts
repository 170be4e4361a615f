export * from './fake-openai';
export * from './database.util';
