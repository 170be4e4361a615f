// Builds dist/ when it is missing or older than a source file, so `npm run start:<app>` works from a clean clone.
const fs = require('node:fs');
const path = require('node:path');
const { execSync } = require('node:child_process');

const root = path.resolve(__dirname, '..');
const stamp = path.join(root, 'dist', '.tsbuildinfo');

function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

const built = fs.existsSync(stamp) ? fs.statSync(stamp).mtimeMs : 0;
const sources = Math.max(...['apps', 'libs', 'tools'].map((d) => newestSource(path.join(root, d))));
if (sources > built) execSync('npm run build', { cwd: root, stdio: 'inherit' });
