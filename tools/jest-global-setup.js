// End-to-end tests run the built services: build them once before their suites start
// (`tsc -b` rebuilds only what changed).
const { execSync } = require('node:child_process');
const path = require('node:path');

module.exports = async () => {
  execSync('npm run --silent build', { cwd: path.resolve(__dirname, '..'), stdio: 'inherit' });
};
