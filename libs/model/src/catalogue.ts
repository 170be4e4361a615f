import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
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
export function loadCatalogue(env: Record<string, string | undefined>): ModelEntry[] {
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

  const parsed = catalogueSchema.safeParse(list);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.flatMap((issue) => describeIssue(issue, list));
  throw new CatalogueError(`PORTAL_MODELS_FILE ${source}:\n  - ${problems.join('\n  - ')}`);
}

const positiveInt = z.number().int().positive();
const usd = z.number().min(0).refine(Number.isFinite);

const entrySchema = z
  .strictObject(
    {
      id: z.string().trim().min(1),
      model: z.string().trim().min(1).optional(),
      baseURL: z.string().refine(isHttpUrl).optional(),
      apiKeyEnv: z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
        .optional(),
      contextWindow: positiveInt,
      vision: z
        .strictObject({ maxLongSide: positiveInt, maxShortSide: positiveInt })
        .refine((v) => v.maxShortSide <= v.maxLongSide, {
          path: ['maxShortSide'],
          message: 'must not exceed maxLongSide',
        })
        .nullish(),
      reasoning: z.boolean().default(false),
      compactAt: z.number().gt(0).lte(1).optional(),
      price: z.strictObject({ inputPerMTok: usd, outputPerMTok: usd, cachedInputPerMTok: usd.optional() }),
      builtin: z.literal('local').optional(),
    },
    { error: 'must be an object' },
  )
  .refine((e) => e.baseURL !== undefined || e.builtin === 'local', {
    path: ['baseURL'],
    message: 'must be an http(s) URL',
  })
  .transform(
    ({
      id,
      model,
      baseURL,
      apiKeyEnv,
      contextWindow,
      vision,
      reasoning,
      compactAt,
      price,
      builtin,
    }): ModelEntry => ({
      id,
      model: model ?? id,
      baseURL: baseURL ?? LOCAL_BASE_URL,
      ...(apiKeyEnv !== undefined && { apiKeyEnv }),
      contextWindow,
      vision: vision ?? null,
      reasoning,
      ...(compactAt !== undefined && { compactAt }),
      // Cached input costs what plain input costs unless the file says otherwise.
      price: { ...price, cachedInputPerMTok: price.cachedInputPerMTok ?? price.inputPerMTok },
      ...(builtin && { builtin }),
    }),
  );

/** PORTAL_MODELS_FILE's `models`: API.md "Model catalogue", ids distinct. */
const catalogueSchema = z.array(entrySchema).superRefine(
  (entries, ctx) => {
    const seen = new Set<unknown>();
    entries.forEach((entry: unknown, i) => {
      // Checked even when an entry is bad (`when`), so the entry may still be the raw value.
      const id = isObject(entry) ? entry['id'] : undefined;
      if (typeof id === 'string' && seen.has(id)) {
        ctx.addIssue({ code: 'custom', path: [i, 'id'], message: 'is listed twice' });
      }
      seen.add(id);
    });
  },
  { when: () => true },
);

/** What the file says wrong about a field, in words; keyed by the field's last name. */
const RULES: Record<string, string> = {
  id: 'must be a non-empty string',
  model: 'must be a non-empty string',
  baseURL: 'must be an http(s) URL',
  apiKeyEnv: 'must be an environment variable name',
  contextWindow: 'must be a positive integer',
  vision: 'must be { maxLongSide, maxShortSide } with positive integers, or be left out',
  maxLongSide: 'must be a positive integer',
  maxShortSide: 'must be a positive integer',
  reasoning: 'must be true or false',
  compactAt: 'must be a number above 0 and at most 1',
  price: 'must be { inputPerMTok, outputPerMTok, cachedInputPerMTok? }',
  inputPerMTok: 'must be a number ≥ 0 (USD per million tokens)',
  outputPerMTok: 'must be a number ≥ 0 (USD per million tokens)',
  cachedInputPerMTok: 'must be a number ≥ 0 (USD per million tokens)',
  builtin: 'must be "local" when given',
};

/** `models[0] (gpt-x).price.inputPerMTok must be …`: one line per problem, naming the entry by its id. */
function describeIssue(issue: z.core.$ZodIssue, list: unknown[]): string[] {
  const [index, ...rest] = issue.path;
  const raw = list[index as number];
  const rawId = isObject(raw) && typeof raw['id'] === 'string' ? raw['id'] : undefined;
  const at = `models[${String(index)}]`;
  const label = rawId === undefined ? at : `${at} (${rawId})`;
  const field = rest.join('.');
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => `${label}.${[...rest, key].join('.')} is not a known field`);
  if (rest.length === 0) return [`${at} must be an object`];
  if (issue.message === 'is listed twice') return [`${at}.id "${rawId}" is listed twice`];
  const custom = issue.code === 'custom' && issue.message !== 'Invalid input' ? issue.message : undefined;
  return [`${label}.${field} ${custom ?? RULES[String(rest.at(-1))] ?? issue.message}`];
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

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
