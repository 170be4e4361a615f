import { execFileSync } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..', '..');

/**
 * ARCHITECTURE rule 1 and 8: the lint rule, not a person, keeps the pure core framework-free.
 * An integration test: it runs Nx and ESLint as processes (about 10 s each on 2 cores), which the
 * unit tier, kept to well under a minute, cannot afford.
 */
describe('module boundaries', () => {
  beforeAll(() => {
    // The boundary rule reads Nx's project graph; make sure it exists, as `npm run lint` does.
    execFileSync(process.execPath, [require.resolve('nx/bin/nx.js'), 'show', 'projects'], {
      cwd: root,
      env: { ...process.env, NX_DAEMON: 'false' },
      stdio: 'ignore',
    });
  });

  // ESLint runs as its own process: its flat config is an ES module, which Jest cannot load.
  async function boundaryErrors(filePath: string, code: string): Promise<string[]> {
    let output: string;
    try {
      output = execFileSync(
        process.execPath,
        [
          path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'),
          '--format',
          'json',
          '--stdin',
          '--stdin-filename',
          filePath,
        ],
        { cwd: root, input: code, encoding: 'utf8' },
      );
    } catch (err) {
      output = (err as { stdout: string }).stdout; // exit code 1 when the code has errors
    }
    const [result] = JSON.parse(output) as Array<{ messages: Array<{ ruleId: string; message: string }> }>;
    return result.messages.filter((m) => m.ruleId === '@nx/enforce-module-boundaries').map((m) => m.message);
  }

  it.each(['@nestjs/common', 'typeorm', 'bullmq'])(
    'refuses %s in libs/domain and libs/prompt',
    async (pkg) => {
      const code = `import * as x from '${pkg}';\nexport const y = x;\n`;
      expect(await boundaryErrors('libs/domain/src/probe.ts', code)).toHaveLength(1);
      expect(await boundaryErrors('libs/prompt/src/probe.ts', code)).toHaveLength(1);
    },
  );

  it('refuses an adapter lib in the core and allows it in an app', async () => {
    const code = `import { DalModule } from '@portal/dal';\nexport const y = DalModule;\n`;
    expect(await boundaryErrors('libs/domain/src/probe.ts', code)).toHaveLength(1);
    expect(await boundaryErrors('apps/gateway/src/probe.ts', code)).toEqual([]);
  });

  it('keeps the application lib above the adapters: apps import it, dal and the core do not', async () => {
    const code = `import { BlobStoreModule } from '@portal/application';\nexport const y = BlobStoreModule;\n`;
    expect(await boundaryErrors('libs/dal/src/probe.ts', code)).not.toEqual([]);
    expect(await boundaryErrors('libs/domain/src/probe.ts', code)).not.toEqual([]);
    expect(await boundaryErrors('apps/gateway/src/probe.ts', code)).toEqual([]);
    const dal = `import { DalModule } from '@portal/dal';\nexport const y = DalModule;\n`;
    expect(await boundaryErrors('libs/application/src/probe.ts', dal)).toEqual([]);
  });
});
