import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CatalogueError,
  findModel,
  loadCatalogue,
  LOCAL_MODEL,
  LOCAL_MODEL_ID,
  priceUsage,
  publicModel,
  type ModelEntry,
} from './catalogue';

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'portal-catalogue-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function loadError(content: string, name = 'models.yaml'): string {
  const path = file(name, content);
  try {
    loadCatalogue({ PORTAL_MODELS_FILE: path });
  } catch (err) {
    expect(err).toBeInstanceOf(CatalogueError);
    expect((err as Error).message).toContain(path);
    return (err as Error).message;
  }
  throw new Error('expected the catalogue to be refused');
}

describe('loadCatalogue without a file', () => {
  it('holds only the built-in local model', () => {
    const catalogue = loadCatalogue({});
    expect(catalogue).toEqual([LOCAL_MODEL]);
    expect(catalogue[0]).toMatchObject({
      id: LOCAL_MODEL_ID,
      builtin: 'local',
      contextWindow: 128000,
      vision: { maxLongSide: 2048, maxShortSide: 768 },
      reasoning: true,
    });
  });

  it('adds the OpenAI models when OPENAI_API_KEY is set', () => {
    const catalogue = loadCatalogue({ OPENAI_API_KEY: 'sk-test' });
    expect(catalogue.map((m) => m.id)).toEqual([LOCAL_MODEL_ID, 'gpt-4.1', 'gpt-4.1-mini', 'o4-mini']);
    expect(findModel(catalogue, 'o4-mini')).toMatchObject({ reasoning: true, apiKeyEnv: 'OPENAI_API_KEY' });
    expect(findModel(catalogue, 'gpt-4.1-mini')).toMatchObject({ contextWindow: 1047576, reasoning: false });
  });
});

describe('loadCatalogue from PORTAL_MODELS_FILE', () => {
  it('reads YAML, filling model from id and cached price from input price', () => {
    const path = file(
      'models.yaml',
      `models:
  - id: gpt-4.1-mini
    baseURL: http://127.0.0.1:8080/v1
    apiKeyEnv: OPENAI_API_KEY
    contextWindow: 1047576
    vision: { maxLongSide: 2048, maxShortSide: 768 }
    reasoning: false
    compactAt: 0.85
    price: { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 }
  - id: qwen
    model: qwen2.5-7b-instruct
    baseURL: http://127.0.0.1:9000/v1
    contextWindow: 32768
    price: { inputPerMTok: 0, outputPerMTok: 0 }
`,
    );
    expect(loadCatalogue({ PORTAL_MODELS_FILE: path })).toEqual<ModelEntry[]>([
      {
        id: 'gpt-4.1-mini',
        model: 'gpt-4.1-mini',
        baseURL: 'http://127.0.0.1:8080/v1',
        apiKeyEnv: 'OPENAI_API_KEY',
        contextWindow: 1047576,
        vision: { maxLongSide: 2048, maxShortSide: 768 },
        reasoning: false,
        compactAt: 0.85,
        price: { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 },
      },
      {
        id: 'qwen',
        model: 'qwen2.5-7b-instruct',
        baseURL: 'http://127.0.0.1:9000/v1',
        contextWindow: 32768,
        vision: null,
        reasoning: false,
        price: { inputPerMTok: 0, outputPerMTok: 0, cachedInputPerMTok: 0 },
      },
    ]);
  });

  it('reads JSON, whatever the file is called, and accepts the built-in local model', () => {
    const path = file(
      'models.conf',
      JSON.stringify({
        models: [
          {
            id: 'local',
            builtin: 'local',
            contextWindow: 4000,
            reasoning: true,
            price: { inputPerMTok: 0, outputPerMTok: 0 },
          },
        ],
      }),
    );
    const [entry] = loadCatalogue({ PORTAL_MODELS_FILE: path });
    expect(entry).toMatchObject({ id: 'local', model: 'local', builtin: 'local', contextWindow: 4000 });
  });

  it('names the file and every bad field', () => {
    const message = loadError(`models:
  - id: a
    baseURL: not a url
    contextWindow: -5
    vision: { maxLongSide: 100, maxShortSide: 200 }
    reasoning: "yes"
    compactAt: 1.5
    price: { inputPerMTok: -1, outputPerMTok: 2 }
    contextwindow: 5
  - id: a
    baseURL: http://x/v1
    contextWindow: 10
`);
    for (const part of [
      'models[0] (a).baseURL must be an http(s) URL',
      'models[0] (a).contextWindow must be a positive integer',
      'models[0] (a).vision.maxShortSide must not exceed maxLongSide',
      'models[0] (a).reasoning must be true or false',
      'models[0] (a).compactAt must be a number above 0 and at most 1',
      'models[0] (a).price.inputPerMTok must be a number ≥ 0',
      'models[0] (a).contextwindow is not a known field',
      'models[1] (a).price must be',
      'models[1].id "a" is listed twice',
    ]) {
      expect(message).toContain(part);
    }
  });

  it('refuses a missing file, an unparsable one and one without models', () => {
    expect(() => loadCatalogue({ PORTAL_MODELS_FILE: join(dir, 'nope.yaml') })).toThrow(
      /nope\.yaml: cannot read it/,
    );
    expect(loadError('{ "models": [ }', 'broken.json')).toMatch(/not valid JSON or YAML/);
    expect(loadError('models: [1, 2')).toMatch(/not valid JSON or YAML/);
    expect(loadError('other: true')).toMatch(/"models" must be a non-empty list/);
    expect(loadError('models:\n  - just a string')).toMatch(/models\[0\] must be an object/);
    expect(
      loadError(
        'models:\n  - { contextWindow: 5, baseURL: "http://x", price: { inputPerMTok: 0, outputPerMTok: 0 } }',
      ),
    ).toMatch(/models\[0\]\.id must be a non-empty string/);
  });
});

describe('publicModel', () => {
  it('shows what clients need, never a key or a URL', () => {
    const entry: ModelEntry = {
      id: 'm',
      model: 'vendor-m',
      baseURL: 'http://secret/v1',
      apiKeyEnv: 'SECRET_KEY',
      contextWindow: 1000,
      vision: null,
      reasoning: false,
      price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
    };
    expect(publicModel(entry)).toEqual({
      id: 'm',
      contextWindow: 1000,
      vision: null,
      reasoning: false,
      effortLevels: [],
      price: { inputPerMTok: 1, outputPerMTok: 2, cachedInputPerMTok: 0.5 },
    });
    expect(JSON.stringify(publicModel(entry))).not.toMatch(/secret|SECRET|vendor/);
    expect(publicModel(LOCAL_MODEL).effortLevels).toEqual(['low', 'medium', 'high']);
  });
});

describe('priceUsage', () => {
  const entry = { ...LOCAL_MODEL, price: { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 } };

  it('prices cached input apart from the rest of the input', () => {
    // 600k plain input × $2 + 400k cached × $0.5 + 100k output × $8
    expect(
      priceUsage(entry, { inputTokens: 1_000_000, cachedTokens: 400_000, outputTokens: 100_000 }),
    ).toBeCloseTo(1.2 + 0.2 + 0.8, 10);
    expect(priceUsage(entry, { inputTokens: 1000, cachedTokens: 0, outputTokens: 0 })).toBe(0.002);
  });

  it('never prices more cached tokens than input tokens', () => {
    expect(priceUsage(entry, { inputTokens: 100, cachedTokens: 500, outputTokens: 0 })).toBe(0.00005);
  });

  it('is free for the local model', () => {
    expect(priceUsage(LOCAL_MODEL, { inputTokens: 5000, cachedTokens: 10, outputTokens: 500 })).toBe(0);
  });
});
