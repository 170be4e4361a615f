export * from './dal.fixtures';
export * from './source-pages.util';
