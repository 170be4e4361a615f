const fs = require('node:fs');
const swc = JSON.parse(fs.readFileSync(`${__dirname}/.swcrc`, 'utf8'));
const swcForJs = {
  ...swc,
  swcrc: false,
  jsc: { ...swc.jsc, parser: { syntax: 'ecmascript' }, transform: {} },
};

// NestJS 12 ships as ES modules; Jest on Node 20 cannot require() them, so swc compiles them to CommonJS.
// openid-client and the test OpenID provider are ES modules too, with jose and oauth4webapi under them.
const esmPackages = [
  '@nestjs',
  '@fastify',
  'fastify',
  'content-disposition',
  'openid-client',
  'oauth4webapi',
  'jose',
  'oidc-provider',
];

/** What every tier shares: TypeScript through swc, `@portal/*` from source. */
const shared = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }],
    '^.+\\.m?js$': ['@swc/jest', swcForJs],
  },
  transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
  moduleNameMapper: {
    '^@portal/domain/testing$': '<rootDir>/libs/domain/src/testing/index.ts',
    '^@portal/dal/testing$': '<rootDir>/libs/dal/src/testing/index.ts',
    '^@portal/testing/oidc$': '<rootDir>/libs/testing/src/oidc/test-idp.ts',
    '^@portal/(.*)$': '<rootDir>/libs/$1/src/index.ts',
  },
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
