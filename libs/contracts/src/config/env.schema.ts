import { z } from 'zod';
import { ConfigError, type Env } from '@portal/domain';

/** What the configuration page says of a variable: what it does and its default as written. */
export interface EnvVarDoc {
  description: string;
  /** The default as one would write it in the environment; none: unset means "not used". */
  default?: string;
}

declare module 'zod' {
  interface GlobalMeta {
    /** Set on every environment variable's schema: the configuration page is made from it. */
    env?: EnvVarDoc;
  }
}

/** Raw text in, typed value out: unset or empty reads as the default text. */
function variable<T extends z.ZodType>(parser: T, doc: EnvVarDoc) {
  const read = z.preprocess((raw) => (raw === undefined || raw === '' ? doc.default : raw), parser);
  return read.meta({ env: doc });
}

const problem = (test: (text: string) => boolean, says: (text: string) => string) =>
  z.string().superRefine((text, ctx) => {
    if (!test(text)) ctx.addIssue({ code: 'custom', message: says(text) });
  });

const commaList = z.string().transform((t) =>
  t
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
);

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The builders of every variable of every app: each names its default and says what it does. */
export const envVar = {
  string: (description: string, fallback: string) => variable(z.string(), { description, default: fallback }),

  /** Text whose absence means "not used" (a file, a key). */
  optional: (description: string) => variable(z.string().optional(), { description }),

  /** A whole number within `range`. */
  int: (description: string, fallback: number, range: { min?: number; max?: number } = {}) =>
    variable(
      problem(
        (t) => /^\d+$/.test(t.trim()),
        (t) => `must be a whole number, got "${t}"`,
      )
        .transform(Number)
        .pipe(
          z
            .number()
            .min(range.min ?? 0, `must be at least ${range.min ?? 0}`)
            .max(range.max ?? Number.MAX_SAFE_INTEGER, `must be at most ${range.max}`),
        ),
      { description, default: String(fallback) },
    ),

  /** A duration as `250ms`, `90s`, `30m`, `24h`, `7d`, or a plain number of milliseconds. */
  duration: (description: string, fallback: string, range: { minMs?: number } = {}) =>
    variable(
      problem(
        (t) => /^\d+(ms|s|m|h|d)?$/.test(t.trim()),
        (t) => `must be a duration like 24h, 30m or 90s, got "${t}"`,
      )
        .transform((t) => {
          const [, amount, unit] = /^(\d+)(ms|s|m|h|d)?$/.exec(t.trim())!;
          return Number(amount) * UNITS_MS[unit ?? 'ms'];
        })
        .pipe(z.number().min(range.minMs ?? 0, `must be at least ${range.minMs ?? 0} ms`)),
      { description, default: fallback },
    ),

  /** A URL with one of `protocols` (`postgres:`, …). */
  url: (description: string, fallback: string, protocols: string[]) =>
    variable(
      problem(
        (t) => URL.canParse(t),
        (t) => `must be a URL, got "${t}"`,
      ).pipe(
        problem(
          (t) => protocols.includes(new URL(t).protocol),
          (t) => `must use ${protocols.join(' or ')}, got "${new URL(t).protocol}"`,
        ),
      ),
      { description, default: fallback },
    ),

  /** Text that matches `pattern`. */
  matching: (description: string, fallback: string, pattern: RegExp, rule: string) =>
    variable(
      problem(
        (t) => pattern.test(t),
        () => rule,
      ),
      { description, default: fallback },
    ),

  /** Comma-separated words; unset is none. */
  list: (description: string) => variable(commaList, { description, default: '' }),

  /** Comma-separated http(s) URL prefixes (`https://tools.example.com/`); unset is none. */
  urlPrefixes: (description: string) =>
    variable(
      commaList.pipe(
        z.array(
          problem(
            (t) => /^https?:\/\/[^/?#]+/.test(t) && URL.canParse(t),
            (t) => `entries must be http(s) URL prefixes, got "${t}"`,
          ),
        ),
      ),
      { description, default: '' },
    ),

  /** Comma-separated `host:port` pairs; unset or empty is none. */
  hostPorts: (description: string) =>
    variable(
      z
        .string()
        .transform((t) => (t.trim() ? t.split(',') : []))
        .pipe(
          z.array(
            problem(
              (entry) => {
                const match = /^([^\s:,]+):(\d{1,5})$/.exec(entry.trim());
                return !!match && Number(match[2]) >= 1 && Number(match[2]) <= 65535;
              },
              (entry) => `must be host:port pairs separated by commas, got "${entry}"`,
            ).transform((entry) => {
              const [host, port] = entry.trim().split(':');
              return { host, port: Number(port) };
            }),
          ),
        ),
      { description, default: '' },
    ),

  /** One of `values`. */
  oneOf: <const V extends readonly [string, ...string[]]>(
    description: string,
    values: V,
    fallback: V[number],
  ) =>
    variable(
      z.enum(values, { error: (iss) => `must be one of ${values.join(', ')}, got "${String(iss.input)}"` }),
      {
        description,
        default: fallback,
      },
    ),
};

/**
 * Reads `env` with `schema`, once, at boot: a bad value throws a ConfigError naming the variable.
 * Variables the schema does not name are left alone (the environment holds much else).
 */
export function parseEnv<S extends z.ZodObject>(schema: S, env: Env): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const [issue] = result.error.issues;
  throw new ConfigError(String(issue.path[0] ?? 'environment'), issue.message);
}

/** Every variable of `schema` with its documentation, in the schema's order. */
export function envVarDocs(schema: z.ZodObject): [name: string, doc: EnvVarDoc][] {
  return Object.entries(schema.shape).flatMap(([name, field]) => {
    const doc = (field as z.ZodType).meta()?.env;
    return doc ? [[name, doc] as [string, EnvVarDoc]] : [];
  });
}
