// End-to-end tests run the built services: build dist/ once before their suites start.
const { execFileSync } = require('node:child_process');
const path = require('node:path');

module.exports = async () => {
  execFileSync(process.execPath, [path.join(__dirname, 'build-if-needed.js')], { stdio: 'inherit' });
};
