export * from './dal.fixtures';
