import { ConfigError, type Env } from '@portal/domain';

/** Every number of SPEC.md, in one place. Overridable by configuration (`PORTAL_LIMIT_<NAME>`). */
export const DEFAULT_LIMITS = {
  /** Past turns replayed after the newest summary (section 4). */
  TURNS_REPLAYED: 20,
  /** Calls replayed per past turn: the last ones hold their place (section 4). */
  CALLS_PER_TURN: 8,
  /** The closest past turns whose tool output is replayed (section 4). */
  TOOL_OUTPUT_TURNS: 3,
  /** Characters of a replayed tool result before it is cut to a reference (section 4). */
  RESULT_PREVIEW_CHARS: 400,
  /** Characters of a string inside replayed arguments before it is cut (section 4). */
  ARG_STRING_CHARS: 200,
  /** A finished document of at most this many characters is placed in the message whole (section 7). */
  INLINE_DOC_CHARS: 6000,
  /** Shared budget for inline document text replayed on later turns, newest first (section 7). */
  INLINE_REPLAY_CHARS: 24000,
  /** Picture-bearing messages that still send their pictures, newest first (section 7). */
  PICTURE_MESSAGES: 3,
  /** Section headings kept in a document manifest (section 7). */
  HEADINGS: 20,
  /** Model calls in one turn before it fails (section 3). */
  MAX_CALLS_PER_TURN: 25,
  /** Share of the context window at which a turn compacts (section 5.1). */
  COMPACT_AT: 0.85,
  /** Messages kept verbatim after an auto compaction (section 5.1). */
  TAIL_MESSAGES: 4,
  /** Share of the context window for the summary's requests section (section 5.2). */
  SUMMARY_REQUESTS_SHARE: 0.25,
  /**
   * Share of the context window kept for the summary's answer (section 5.2): the summary prompt
   * must fit in the rest, so the oldest turns since the earlier summary are left out past it.
   */
  SUMMARY_OUTPUT_SHARE: 0.25,
  /** The person's latest paragraphs quoted to pick the summary's language (section 5.2). */
  SUMMARY_LANGUAGE_PARAGRAPHS: 8,
  /** Characters each quoted paragraph is cut to (section 5.2). */
  SUMMARY_PARAGRAPH_CHARS: 400,
  /** Characters an old request keeps once the requests section is past its share (section 5.2). */
  SHORTENED_REQUEST_CHARS: 200,
} as const;

/**
 * The numbers of the web client's screen (section 9). The browser reads no configuration, so
 * these are fixed, not overridable like DEFAULT_LIMITS.
 */
export const SCREEN_LIMITS = {
  /** Live text plays out about this far behind what has arrived. */
  PLAYOUT_LAG_MS: 600,
  /** Live text never plays out slower than this while anything is waiting. */
  PLAYOUT_MIN_CHARS_PER_SECOND: 40,
  /** The playout speed eases toward its target over about this long. */
  PLAYOUT_EASE_MS: 300,
  /** The "Summarising conversation" divider shows a clock once the summary takes this long. */
  COMPACTION_CLOCK_AFTER_MS: 3000,
} as const;

export type LimitName = keyof typeof DEFAULT_LIMITS;
export type Limits = { readonly [K in LimitName]: number };

/** Shares of the context window; every other limit is a whole number. */
const FRACTIONS: ReadonlySet<LimitName> = new Set([
  'COMPACT_AT',
  'SUMMARY_REQUESTS_SHARE',
  'SUMMARY_OUTPUT_SHARE',
]);
/** Limits that make no sense at zero. */
const AT_LEAST_ONE: ReadonlySet<LimitName> = new Set(['MAX_CALLS_PER_TURN', 'TAIL_MESSAGES']);

export const LIMIT_ENV_PREFIX = 'PORTAL_LIMIT_';

function isLimitName(name: string): name is LimitName {
  return Object.prototype.hasOwnProperty.call(DEFAULT_LIMITS, name);
}

/** Why `value` is not acceptable for `name`, or null when it is. */
function problemWith(name: LimitName, value: number): string | null {
  if (!Number.isFinite(value)) return 'must be a finite number';
  if (FRACTIONS.has(name)) return value > 0 && value <= 1 ? null : 'must be a share above 0 and at most 1';
  if (!Number.isInteger(value) || value < 0) return 'must be a whole number';
  if (AT_LEAST_ONE.has(name) && value < 1) return 'must be at least 1';
  return null;
}

/** The defaults with `overrides` applied; an unknown name or a bad value throws, naming it. */
export function resolveLimits(overrides: Partial<Limits> = {}): Limits {
  const limits: Record<string, number> = { ...DEFAULT_LIMITS };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) continue;
    if (!isLimitName(name)) throw new ConfigError(name, 'is not a limit');
    const problem = problemWith(name, value);
    if (problem) throw new ConfigError(name, `${problem}, got ${value}`);
    limits[name] = value;
  }
  return Object.freeze(limits) as Limits;
}

/**
 * Limits from `PORTAL_LIMIT_<NAME>` variables. A bad value, or a `PORTAL_LIMIT_` variable that names
 * no limit (a typo would otherwise be ignored silently), throws a ConfigError naming the variable.
 */
export function limitsFromEnv(env: Env): Limits {
  const overrides: Record<string, number> = {};
  for (const [variable, raw] of Object.entries(env)) {
    if (!variable.startsWith(LIMIT_ENV_PREFIX) || raw === undefined || raw === '') continue;
    const name = variable.slice(LIMIT_ENV_PREFIX.length);
    if (!isLimitName(name)) throw new ConfigError(variable, 'names no limit');
    const text = raw.trim();
    const value = /^\d+(\.\d+)?$/.test(text) ? Number(text) : NaN;
    const problem = Number.isNaN(value) ? 'must be a number' : problemWith(name, value);
    if (problem) throw new ConfigError(variable, `${problem}, got "${raw}"`);
    overrides[name] = value;
  }
  return resolveLimits(overrides);
}
