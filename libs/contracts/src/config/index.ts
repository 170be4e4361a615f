export * from './env.schema';
export * from './common.env';
export { ConfigError, type Env } from '@portal/domain';
