import { execSync } from 'node:child_process';
import path from 'node:path';

/** The benches run the built services: `npm run build` first (`tsc -b` rebuilds only what changed). */
export function buildServices(): void {
  execSync('npm run --silent build', { cwd: path.resolve(__dirname, '..', '..'), stdio: 'inherit' });
}
