import { ConfigError } from '@portal/contracts';
import { readTracingConfig } from './tracing-config.util';

const ENDPOINT = 'http://otel-collector:4318';

describe('readTracingConfig', () => {
  it('is off without an OTLP endpoint, or when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says so', () => {
    expect(readTracingConfig({}, 'gateway')).toEqual({ enabled: false });
    expect(
      readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_SDK_DISABLED: 'true' }, 'gateway'),
    ).toEqual({ enabled: false });
    expect(
      readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_TRACES_EXPORTER: 'none' }, 'gateway'),
    ).toEqual({ enabled: false });
  });

  it('is on with an endpoint: http/protobuf by default, the app named unless OTEL_SERVICE_NAME says otherwise', () => {
    expect(readTracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, 'compaction-worker')).toEqual({
      enabled: true,
      serviceName: 'compaction-worker',
      protocol: 'http/protobuf',
    });
    expect(
      readTracingConfig(
        {
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces`,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_SERVICE_NAME: 'portal-gateway-eu',
        },
        'gateway',
      ),
    ).toEqual({ enabled: true, serviceName: 'portal-gateway-eu', protocol: 'http/json' });
  });

  it('takes the traces protocol over the general one', () => {
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    };
    expect(readTracingConfig(env, 'gateway')).toMatchObject({ protocol: 'http/protobuf' });
  });

  it('stops on a protocol or exporter it cannot serve, naming the variable', () => {
    const grpc = () =>
      readTracingConfig(
        { OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' },
        'gateway',
      );
    expect(grpc).toThrow(ConfigError);
    expect(grpc).toThrow(
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http\/protobuf or http\/json, got "grpc"/,
    );
    expect(() => readTracingConfig({ OTEL_TRACES_EXPORTER: 'zipkin' }, 'gateway')).toThrow(
      /OTEL_TRACES_EXPORTER must be otlp or none/,
    );
  });
});
