// Runs a TypeScript file directly (benchmarks, scripts): swc transpiles .ts and @portal/* maps to libs/*/src.
const path = require('node:path');
const fs = require('node:fs');
const Module = require('node:module');

const root = path.resolve(__dirname, '..');
const swc = require('@swc/core');
const swcrc = JSON.parse(fs.readFileSync(path.join(root, '.swcrc'), 'utf8'));
require('reflect-metadata');

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const lib = /^@portal\/([^/]+)(\/testing)?$/.exec(request);
  if (lib) return path.join(root, 'libs', lib[1], 'src', lib[2] ? 'testing/index.ts' : 'index.ts');
  return resolveFilename.call(this, request, ...rest);
};
require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const { code } = swc.transformSync(source, { ...swcrc, swcrc: false, filename, sourceMaps: 'inline' });
  module._compile(code, filename);
};

// Load the target as the main module, so `require.main === module` holds inside it.
const target = path.resolve(process.argv[2]);
process.argv.splice(1, 1);
const main = new Module(target, null);
main.filename = target;
main.paths = Module._nodeModulePaths(path.dirname(target));
process.mainModule = main;
require.cache[target] = main;
Object.defineProperty(require, 'main', { value: main });
main.load(target);
