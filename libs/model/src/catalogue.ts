import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { EFFORT_LEVELS, type Effort } from '@portal/domain';

export interface ModelVision {
  maxLongSide: number;
  maxShortSide: number;
}

export interface ModelPrice {
  inputPerMTok: number;
  outputPerMTok: number;
  cachedInputPerMTok: number;
}

export interface ModelEntry {
  /** The id agents name. */
  id: string;
  /** What is sent to the API. */
  model: string;
  baseURL: string;
  /** Name of the env var holding the API key. */
  apiKeyEnv?: string;
  contextWindow: number;
  /** null: the model cannot see. */
  vision: ModelVision | null;
  /** true: effort is sent as `reasoning_effort`. */
  reasoning: boolean;
  /** Share of contextWindow that triggers compaction; absent: the prompt library's default. */
  compactAt?: number;
  price: ModelPrice;
  /** Served in-process by the local model server; baseURL is filled in when it starts. */
  builtin?: 'local';
}

/** One row of `GET /v1/models`: never a key or a URL. */
export interface PublicModel {
  id: string;
  contextWindow: number;
  vision: ModelVision | null;
  reasoning: boolean;
  effortLevels: Effort[];
  price: ModelPrice;
}

export interface TokenUsage {
  /** Cached tokens included, as the provider counts them. */
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
}

export const LOCAL_MODEL_ID = 'portal-local';
export const LOCAL_BASE_URL = 'builtin:local';
const OPENAI_BASE_URL = 'https://api.openai.com/v1';
// OpenAI high-detail images are fitted into 2048×2048, then the short side into 768.
const OPENAI_VISION: ModelVision = { maxLongSide: 2048, maxShortSide: 768 };

export const LOCAL_MODEL: ModelEntry = {
  id: LOCAL_MODEL_ID,
  model: LOCAL_MODEL_ID,
  baseURL: LOCAL_BASE_URL,
  contextWindow: 128_000,
  vision: { maxLongSide: 2048, maxShortSide: 768 },
  reasoning: true,
  price: { inputPerMTok: 0, outputPerMTok: 0, cachedInputPerMTok: 0 },
  builtin: 'local',
};

export const OPENAI_MODELS: ModelEntry[] = [
  {
    id: 'gpt-4.1',
    model: 'gpt-4.1',
    baseURL: OPENAI_BASE_URL,
    apiKeyEnv: 'OPENAI_API_KEY',
    contextWindow: 1_047_576,
    vision: OPENAI_VISION,
    reasoning: false,
    price: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
  },
  {
    id: 'gpt-4.1-mini',
    model: 'gpt-4.1-mini',
    baseURL: OPENAI_BASE_URL,
    apiKeyEnv: 'OPENAI_API_KEY',
    contextWindow: 1_047_576,
    vision: OPENAI_VISION,
    reasoning: false,
    price: { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 },
  },
  {
    id: 'o4-mini',
    model: 'o4-mini',
    baseURL: OPENAI_BASE_URL,
    apiKeyEnv: 'OPENAI_API_KEY',
    contextWindow: 200_000,
    vision: OPENAI_VISION,
    reasoning: true,
    price: { inputPerMTok: 1.1, outputPerMTok: 4.4, cachedInputPerMTok: 0.275 },
  },
];

export class CatalogueError extends Error {
  override name = 'CatalogueError';
}

/**
 * The model catalogue: PORTAL_MODELS_FILE when set (a bad file throws CatalogueError naming the
 * file and every bad field), else the built-in local model plus the OpenAI models when
 * OPENAI_API_KEY is set. The first entry is the default model.
 */
export function loadCatalogue(env: Record<string, string | undefined> = process.env): ModelEntry[] {
  const file = env['PORTAL_MODELS_FILE'];
  if (!file) return env['OPENAI_API_KEY'] ? [LOCAL_MODEL, ...OPENAI_MODELS] : [LOCAL_MODEL];

  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogueError(`PORTAL_MODELS_FILE ${file}: cannot read it (${(err as Error).message})`);
  }
  return parseCatalogue(content, file);
}

/** Parses and validates catalogue text (JSON or YAML, told apart by content). */
export function parseCatalogue(content: string, source: string): ModelEntry[] {
  let doc: unknown;
  try {
    doc = /^\s*[[{]/.test(content) ? JSON.parse(content) : parseYaml(content);
  } catch (err) {
    throw new CatalogueError(
      `PORTAL_MODELS_FILE ${source}: not valid JSON or YAML (${(err as Error).message})`,
    );
  }
  const list = Array.isArray(doc) ? doc : isObject(doc) ? doc['models'] : undefined;
  if (!Array.isArray(list) || list.length === 0) {
    throw new CatalogueError(`PORTAL_MODELS_FILE ${source}: "models" must be a non-empty list`);
  }

  const problems: string[] = [];
  const entries = list.map((raw, i) => validateEntry(raw, `models[${i}]`, problems));
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (entry.id && seen.has(entry.id)) problems.push(`models[${i}].id "${entry.id}" is listed twice`);
    seen.add(entry.id);
  });
  if (problems.length > 0) {
    throw new CatalogueError(`PORTAL_MODELS_FILE ${source}:\n  - ${problems.join('\n  - ')}`);
  }
  return entries;
}

const ENTRY_KEYS = new Set([
  'id',
  'model',
  'baseURL',
  'apiKeyEnv',
  'contextWindow',
  'vision',
  'reasoning',
  'compactAt',
  'price',
  'builtin',
]);

function validateEntry(raw: unknown, at: string, problems: string[]): ModelEntry {
  if (!isObject(raw)) {
    problems.push(`${at} must be an object`);
    return {} as ModelEntry;
  }
  const label = typeof raw['id'] === 'string' ? `${at} (${raw['id']})` : at;
  const bad = (field: string, rule: string) => problems.push(`${label}.${field} ${rule}`);
  for (const key of Object.keys(raw)) if (!ENTRY_KEYS.has(key)) bad(key, 'is not a known field');

  const id = raw['id'];
  if (typeof id !== 'string' || id.trim() === '') bad('id', 'must be a non-empty string');

  const model = raw['model'] ?? id;
  if (typeof model !== 'string' || model.trim() === '') bad('model', 'must be a non-empty string');

  const builtin = raw['builtin'];
  if (builtin !== undefined && builtin !== 'local') bad('builtin', 'must be "local" when given');

  let baseURL = raw['baseURL'];
  if (builtin === 'local' && baseURL === undefined) baseURL = LOCAL_BASE_URL;
  else if (typeof baseURL !== 'string' || !isHttpUrl(baseURL)) bad('baseURL', 'must be an http(s) URL');

  const apiKeyEnv = raw['apiKeyEnv'];
  if (
    apiKeyEnv !== undefined &&
    (typeof apiKeyEnv !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(apiKeyEnv))
  ) {
    bad('apiKeyEnv', 'must be an environment variable name');
  }

  const contextWindow = raw['contextWindow'];
  if (!isPositiveInt(contextWindow)) bad('contextWindow', 'must be a positive integer');

  let vision: ModelVision | null = null;
  if (raw['vision'] !== undefined && raw['vision'] !== null) {
    const v = raw['vision'];
    if (!isObject(v) || !isPositiveInt(v['maxLongSide']) || !isPositiveInt(v['maxShortSide'])) {
      bad('vision', 'must be { maxLongSide, maxShortSide } with positive integers, or be left out');
    } else if (v['maxShortSide'] > v['maxLongSide']) {
      bad('vision.maxShortSide', 'must not exceed maxLongSide');
    } else {
      vision = { maxLongSide: v['maxLongSide'], maxShortSide: v['maxShortSide'] };
    }
  }

  const reasoning = raw['reasoning'] ?? false;
  if (typeof reasoning !== 'boolean') bad('reasoning', 'must be true or false');

  const compactAt = raw['compactAt'];
  if (compactAt !== undefined && !(typeof compactAt === 'number' && compactAt > 0 && compactAt <= 1)) {
    bad('compactAt', 'must be a number above 0 and at most 1');
  }

  const price = raw['price'];
  let checkedPrice: ModelPrice = { inputPerMTok: 0, outputPerMTok: 0, cachedInputPerMTok: 0 };
  if (!isObject(price)) {
    bad('price', 'must be { inputPerMTok, outputPerMTok, cachedInputPerMTok? }');
  } else {
    for (const key of Object.keys(price)) {
      if (!['inputPerMTok', 'outputPerMTok', 'cachedInputPerMTok'].includes(key)) {
        bad(`price.${key}`, 'is not a known field');
      }
    }
    // Cached input costs what plain input costs unless the file says otherwise.
    const cached = price['cachedInputPerMTok'] ?? price['inputPerMTok'];
    for (const [key, value] of [
      ['inputPerMTok', price['inputPerMTok']],
      ['outputPerMTok', price['outputPerMTok']],
      ['cachedInputPerMTok', cached],
    ] as const) {
      if (!isNonNegative(value)) bad(`price.${key}`, 'must be a number ≥ 0 (USD per million tokens)');
    }
    checkedPrice = {
      inputPerMTok: price['inputPerMTok'] as number,
      outputPerMTok: price['outputPerMTok'] as number,
      cachedInputPerMTok: cached as number,
    };
  }

  const entry: ModelEntry = {
    id: id as string,
    model: model as string,
    baseURL: baseURL as string,
    contextWindow: contextWindow as number,
    vision,
    reasoning: reasoning as boolean,
    price: checkedPrice,
  };
  if (apiKeyEnv !== undefined) entry.apiKeyEnv = apiKeyEnv as string;
  if (compactAt !== undefined) entry.compactAt = compactAt as number;
  if (builtin === 'local') entry.builtin = 'local';
  return entry;
}

export function findModel(catalogue: readonly ModelEntry[], id: string): ModelEntry | undefined {
  return catalogue.find((entry) => entry.id === id);
}

export function publicModel(entry: ModelEntry): PublicModel {
  return {
    id: entry.id,
    contextWindow: entry.contextWindow,
    vision: entry.vision ? { ...entry.vision } : null,
    reasoning: entry.reasoning,
    effortLevels: entry.reasoning ? [...EFFORT_LEVELS] : [],
    price: { ...entry.price },
  };
}

/** Cost in USD: cached input at cachedInputPerMTok, the rest of input at inputPerMTok. */
export function priceUsage(entry: ModelEntry, usage: TokenUsage): number {
  const cached = Math.min(usage.cachedTokens, usage.inputTokens);
  const { inputPerMTok, outputPerMTok, cachedInputPerMTok } = entry.price;
  const cost =
    ((usage.inputTokens - cached) * inputPerMTok +
      cached * cachedInputPerMTok +
      usage.outputTokens * outputPerMTok) /
    1_000_000;
  // Drop float noise such as 0.30000000000000004.
  return Math.round(cost * 1e12) / 1e12;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function isNonNegative(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
