export * from './tracing/tracing-config.util';
export * from './tracing/tracing-sdk.util';
export * from './tracing/spans.util';
