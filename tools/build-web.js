// Bundles the web client (apps/portal-web) with esbuild into dist/apps/portal-web/public, where the
// gateway serves it: app.js (+ source map) and the chunks it loads on demand, index.html, styles.css
// and favicon.svg. Each file is replaced in one step, so a running gateway (or a test suite building
// at the same time) never serves a gap.
const fs = require('node:fs');
const path = require('node:path');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const app = path.join(root, 'apps', 'portal-web');
const out = path.join(root, 'dist', 'apps', 'portal-web', 'public');
const libs = path.join(root, 'libs') + path.sep;

// The workspace libs the client imports are pure (ARCHITECTURE rule 1): marked free of side effects,
// their unused exports fall away, with the Node-only packages that only those exports need.
const pureLibs = {
  name: 'pure-libs',
  setup(build) {
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === 'pure-libs' || !args.importer.startsWith(libs)) return undefined;
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'pure-libs',
      });
      if (resolved.errors.length > 0) return { path: args.path, external: true, sideEffects: false };
      return { ...resolved, sideEffects: false };
    });
  },
};

/** Replaces a file in one step, so a gateway serving the folder never sees it half written or gone. */
function writeAtomically(file, contents) {
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, contents);
  fs.renameSync(temp, file);
}

async function main() {
  fs.mkdirSync(out, { recursive: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { app: path.join(app, 'src', 'main.ts') },
    outdir: out,
    // ES modules split: what only some people use (formatted replies) loads when first needed.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox115', 'safari16.4'],
    tsconfig: path.join(root, 'tsconfig.base.json'),
    // The workspace libs bundled from their TypeScript sources (the `portal-source` export condition).
    conditions: ['portal-source'],
    sourcemap: true,
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: true,
    write: false,
    plugins: [pureLibs],
  });
  // A Node-only package left in the bundle would fail in the browser: refuse to ship it.
  const external = Object.values(result.metafile.outputs).flatMap((o) =>
    o.imports.filter((i) => i.external).map((i) => i.path),
  );
  if (external.length > 0) throw new Error(`portal-web: the bundle still needs ${external.join(', ')}`);
  for (const file of result.outputFiles) {
    fs.mkdirSync(path.dirname(file.path), { recursive: true });
    writeAtomically(file.path, file.contents);
  }
  for (const file of ['index.html', 'styles.css', 'favicon.svg']) {
    writeAtomically(path.join(out, file), fs.readFileSync(path.join(app, 'public', file)));
  }
  // What a page loads at once (app.js and the chunks it imports statically), and what waits.
  const kB = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;
  const outputs = result.metafile.outputs;
  const entry = path.relative(root, path.join(out, 'app.js'));
  const first = new Set([
    entry,
    ...outputs[entry].imports.filter((i) => i.kind === 'import-statement').map((i) => i.path),
  ]);
  const scripts = Object.entries(outputs).filter(([file]) => file.endsWith('.js'));
  const sum = (list) => list.reduce((n, [, o]) => n + o.bytes, 0);
  console.log(
    `portal-web: ${path.relative(root, out)} (at once ${kB(sum(scripts.filter(([f]) => first.has(f))))}, ` +
      `on demand ${kB(sum(scripts.filter(([f]) => !first.has(f))))})`,
  );
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
