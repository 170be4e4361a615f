import { Writable } from 'node:stream';

export interface CapturedLogs {
  /** Hand to pino (`createLogger({ destination })`). */
  destination: Writable;
  /** Every line written, as written. */
  raw: string[];
  /** Every line, parsed: a line that is not JSON fails the parse here. */
  lines(): Record<string, any>[];
}

/** A log destination that keeps what is written, for assertions on JSON logs. */
export function captureLogs(): CapturedLogs {
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      raw.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { destination, raw, lines: () => raw.map((line) => JSON.parse(line)) };
}
