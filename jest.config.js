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

/** One runner for every tier: unit (*.spec.ts), integration (*.int-spec.ts), end to end (apps/<app>/test). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/tools'],
  testMatch: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts'],
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
  globalSetup: '<rootDir>/tools/jest-global-setup.js',
  testTimeout: 30000,
  maxWorkers: 2,
};
