export * from './fake-openai.server';
