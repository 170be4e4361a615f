const fs = require('node:fs');
const swc = JSON.parse(fs.readFileSync(`${__dirname}/.swcrc`, 'utf8'));
const swcForJs = {
  ...swc,
  swcrc: false,
  jsc: { ...swc.jsc, parser: { syntax: 'ecmascript' }, transform: {} },
};

// NestJS 12 ships as ES modules; Jest on Node 20 cannot require() them, so swc compiles them to CommonJS.
// openid-client and the test OpenID provider are ES modules too, with jose and oauth4webapi under them,
// and so is the OpenAPI validator of the contract's tests.
const esmPackages = [
  '@seriousme',
  '@nestjs',
  '@fastify',
  'fastify',
  'content-disposition',
  'openid-client',
  'oauth4webapi',
  'jose',
  'oidc-provider',
];

/** What every tier shares: TypeScript through swc, the workspace libs from source. */
const shared = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/tools'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }],
    '^.+\\.m?js$': ['@swc/jest', swcForJs],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  // `@portal/*` resolves through node_modules like any package; the `portal-source` condition
  // of their exports maps picks the TypeScript sources, so tests need no build.
  testEnvironmentOptions: { customExportConditions: ['portal-source', 'node', 'node-addons'] },
  setupFiles: ['reflect-metadata'],
};

/**
 * Three tiers, each runnable alone (`jest --selectProjects unit`): unit tests need no database,
 * Redis or build; integration tests use the local Postgres and Redis; end-to-end tests start the
 * built services, so only they build dist/ first.
 */
module.exports = {
  testTimeout: 30000,
  maxWorkers: 2,
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['**/*.spec.ts'] },
    { ...shared, displayName: 'int', testMatch: ['**/*.int-spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/tools/jest-global-setup.js',
    },
  ],
};
