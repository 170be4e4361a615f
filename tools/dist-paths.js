// Preloaded (`node -r ./tools/dist-paths.js`) by every built service: maps `@portal/<lib>` to its
// compiled entry in dist/, the runtime twin of the `paths` in tsconfig.base.json.
const path = require('node:path');
const Module = require('node:module');

const dist = path.resolve(__dirname, '..', 'dist', 'libs');
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const lib = /^@portal\/([a-z-]+)$/.exec(request);
  if (lib) return path.join(dist, lib[1], 'src', 'index.js');
  return resolveFilename.call(this, request, ...rest);
};
