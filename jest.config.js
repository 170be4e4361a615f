const fs = require('node:fs');
const swc = JSON.parse(fs.readFileSync(`${__dirname}/.swcrc`, 'utf8'));

/** One runner for every tier: unit (*.spec.ts), integration (*.int-spec.ts), end to end (apps/<app>/test). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/apps', '<rootDir>/libs'],
  testMatch: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts'],
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }] },
  moduleNameMapper: { '^@portal/(.*)$': '<rootDir>/libs/$1/src/index.ts' },
  setupFiles: ['reflect-metadata'],
  testTimeout: 30000,
  maxWorkers: 2,
};
