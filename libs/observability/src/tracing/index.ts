export * from './tracing-config.util';
export * from './tracing-sdk.util';
export * from './spans.util';
