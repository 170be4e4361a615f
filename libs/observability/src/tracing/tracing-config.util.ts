import { ConfigError, readTracingEnv, type Env } from '@portal/contracts';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** Tracing as the standard OTEL_* variables ask for it: off unless an OTLP endpoint is named. */
export type TracingConfig =
  { enabled: false } | { enabled: true; serviceName: string; protocol: OtlpProtocol };

const PROTOCOLS: readonly string[] = ['http/protobuf', 'http/json'];

/**
 * Reads OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT,
 * OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL and OTEL_SERVICE_NAME. The exporter itself reads the
 * endpoint, headers and timeouts from the same variables.
 */
export function readTracingConfig(env: Env, defaultServiceName: string): TracingConfig {
  const vars = readTracingEnv(env);
  const endpoint = vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || vars.OTEL_EXPORTER_OTLP_ENDPOINT;
  const exporter = vars.OTEL_TRACES_EXPORTER;
  if (exporter !== 'otlp' && exporter !== 'none') {
    throw new ConfigError('OTEL_TRACES_EXPORTER', `must be otlp or none, got "${exporter}"`);
  }
  if (vars.OTEL_SDK_DISABLED === 'true' || exporter === 'none' || !endpoint) return { enabled: false };
  const variable = vars.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = vars[variable] || 'http/protobuf';
  if (!PROTOCOLS.includes(protocol)) {
    throw new ConfigError(variable, `must be http/protobuf or http/json, got "${protocol}"`);
  }
  return {
    enabled: true,
    serviceName: vars.OTEL_SERVICE_NAME || defaultServiceName,
    protocol: protocol as OtlpProtocol,
  };
}
