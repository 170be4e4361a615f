export * from './otlp-receiver';
