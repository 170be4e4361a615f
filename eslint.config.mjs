import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';

const frameworks = [
  '@nestjs/*',
  'typeorm',
  'bullmq',
  'ioredis',
  'pg',
  'openai',
  'fastify',
  'sharp',
  'pdfjs-dist',
];

const TEST_FILES = [
  '**/*.spec.ts',
  '**/*.int-spec.ts',
  '**/*.e2e-spec.ts',
  'apps/*/test/**/*.ts',
  '**/src/testing/**/*.ts',
];

/**
 * `type:test` libs (fakes, harnesses, corpora) may be imported by tests and test helpers only.
 * `type:application` libs (services several apps share, over the adapters) are imported by apps;
 * the adapters below them never import them.
 */
function moduleBoundaries({ forTests }) {
  const test = forTests ? ['type:test'] : [];
  return {
    allow: [],
    depConstraints: [
      { sourceTag: 'type:test', onlyDependOnLibsWithTags: ['type:core', 'type:adapter', 'type:test'] },
      {
        sourceTag: 'type:app',
        onlyDependOnLibsWithTags: ['type:core', 'type:adapter', 'type:application', ...test],
      },
      {
        sourceTag: 'type:application',
        onlyDependOnLibsWithTags: ['type:core', 'type:adapter', 'type:application', ...test],
      },
      { sourceTag: 'type:adapter', onlyDependOnLibsWithTags: ['type:core', 'type:adapter', ...test] },
      {
        sourceTag: 'type:core',
        onlyDependOnLibsWithTags: ['type:core', ...test],
        bannedExternalImports: frameworks,
      },
    ],
  };
}

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      'coverage/**',
      '.nx/**',
      'apps/portal-web/public/vendor/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@nx/enforce-module-boundaries': ['error', moduleBoundaries({ forTests: false })],
    },
  },
  {
    files: TEST_FILES,
    rules: { '@nx/enforce-module-boundaries': ['error', moduleBoundaries({ forTests: true })] },
  },
  {
    // Config is read once, in each app's main.ts, with its env schema; libs receive it typed.
    files: ['libs/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'libs/testing/**', 'libs/*/bench/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message:
            "Libs receive typed config from the app's env schema (apps/*/src/config.ts), never process.env.",
        },
      ],
    },
  },
  {
    // Tests and their helpers read untyped JSON from HTTP answers.
    files: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'libs/testing/src/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
