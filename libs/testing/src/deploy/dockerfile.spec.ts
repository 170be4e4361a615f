import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DockerfileParser } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { APPS, defaultPort, LAUNCHER, readRepoFile, ROOT, WORKERS } from './deploy.util';

/** Our rules on top of dockerfile-utils' own checks (syntax, flags, duplicate instructions). */
function dockerfileProblems(text: string): string[] {
  const problems = validate(text).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
  const dockerfile = DockerfileParser.parse(text);
  const lines = text.split('\n');
  const args = new Map(
    dockerfile.getInitialARGs().map((a) => [a.getProperty()?.getName(), a.getProperty()?.getValue()]),
  );
  const stages: { name: string | undefined; instructions: { keyword: string; text: string }[] }[] = [];

  for (const instruction of dockerfile.getInstructions()) {
    const keyword = instruction.getKeyword();
    const range = instruction.getRange();
    const raw = lines.slice(range.start.line, range.end.line + 1).join('\n');
    if (keyword === 'FROM') {
      const from = dockerfile.getFROMs().find((f) => f.getRange().start.line === range.start.line);
      const image = (from?.getImage() ?? '').replace(
        /\$\{?(\w+)\}?/g,
        (_, name: string) => args.get(name) ?? '',
      );
      if (!stages.some((s) => s.name === image)) {
        const tag = /^[^@]+:([\w.-]+)$/.exec(image)?.[1];
        if (!tag && !/@sha256:[0-9a-f]{64}$/.test(image)) problems.push(`FROM ${image}: pin a tag or digest`);
        if (tag === 'latest') problems.push(`FROM ${image}: "latest" is not a pinned tag`);
        // sharp installs prebuilt binaries for glibc (@img/sharp-linux-x64); Alpine has musl.
        if (/alpine/.test(image)) problems.push(`FROM ${image}: use a glibc (Debian) image for sharp`);
      }
      stages.push({ name: from?.getBuildStage() ?? undefined, instructions: [] });
    } else if (stages.length) {
      stages[stages.length - 1].instructions.push({ keyword, text: raw });
    }
    if (keyword === 'RUN' && /\bnpm\s+(install|i|add)\b/.test(raw))
      problems.push(`${raw.trim()}: use npm ci`);
  }

  const final = stages[stages.length - 1];
  if (!final) return [...problems, 'no FROM'];
  const of = (keyword: string) => final.instructions.filter((i) => i.keyword === keyword);
  const user = of('USER')
    .pop()
    ?.text.replace(/^USER\s+/i, '')
    .trim();
  if (!user || /^(root|0)(:|$)/.test(user))
    problems.push(`final stage runs as ${user ?? 'root'}: add a non-root USER`);
  const healthcheck = of('HEALTHCHECK').pop()?.text;
  if (!healthcheck || /HEALTHCHECK\s+NONE/i.test(healthcheck))
    problems.push('final stage has no HEALTHCHECK');
  const entrypoint = of('ENTRYPOINT').pop()?.text;
  if (!entrypoint || !/^ENTRYPOINT\s+\[/i.test(entrypoint))
    problems.push('final stage needs an exec-form ENTRYPOINT');
  if (!of('RUN').some((r) => /\bnpm ci\b.*--omit=dev/.test(r.text))) {
    problems.push('final stage must install production dependencies only (npm ci --omit=dev)');
  }
  const earlier = stages.slice(0, -1).flatMap((s) => s.instructions.filter((i) => i.keyword === 'RUN'));
  if (!earlier.some((r) => /\bnpm ci\b/.test(r.text) && !/--omit=dev/.test(r.text))) {
    problems.push('a build stage must run npm ci with dev dependencies');
  }
  if (!earlier.some((r) => /\bnpm run build\b/.test(r.text)))
    problems.push('a build stage must run npm run build');
  return problems;
}

describe('docker/Dockerfile', () => {
  const dockerfile = readRepoFile('docker/Dockerfile');

  it('passes dockerfile-utils and our rules', () => {
    expect(dockerfileProblems(dockerfile)).toEqual([]);
  });

  it.each([
    [
      'an unpinned base',
      (t: string) => t.replace(/^ARG NODE_IMAGE=.*$/m, 'ARG NODE_IMAGE=node'),
      /pin a tag/,
    ],
    ['latest', (t: string) => t.replace(/^ARG NODE_IMAGE=.*$/m, 'ARG NODE_IMAGE=node:latest'), /latest/],
    ['Alpine', (t: string) => t.replace(/^ARG NODE_IMAGE=.*$/m, 'ARG NODE_IMAGE=node:20-alpine'), /glibc/],
    ['root', (t: string) => t.replace(/^USER .*$/m, 'USER root'), /non-root USER/],
    ['no USER', (t: string) => t.replace(/^USER .*$/m, ''), /non-root USER/],
    ['no HEALTHCHECK', (t: string) => t.replace(/^HEALTHCHECK .*$/m, ''), /no HEALTHCHECK/],
    ['npm install', (t: string) => t.replace('npm ci --omit=dev', 'npm install --omit=dev'), /use npm ci/],
    ['dev dependencies in the image', (t: string) => t.replace('npm ci --omit=dev', 'npm ci'), /--omit=dev/],
    ['no build', (t: string) => t.replace('RUN npm run build', 'RUN true'), /npm run build/],
    [
      'shell-form ENTRYPOINT',
      (t: string) => t.replace(/^ENTRYPOINT .*$/m, 'ENTRYPOINT sh /app/docker/entrypoint.sh'),
      /exec-form/,
    ],
    ['a typo', (t: string) => t.replace('WORKDIR /app', 'WORKDIRR /app'), /Unknown instruction: WORKDIRR/],
  ])('fails with %s', (_, breakIt, expected) => {
    expect(dockerfileProblems(breakIt(dockerfile)).join('\n')).toMatch(expected);
  });

  it('the lockfile carries sharp and its prebuilt glibc binaries as production dependencies', () => {
    const lock = JSON.parse(readRepoFile('package-lock.json')).packages;
    for (const pkg of [
      'node_modules/sharp',
      'node_modules/@img/sharp-linux-x64',
      'node_modules/@img/sharp-libvips-linux-x64',
    ]) {
      expect(lock[pkg]).toBeDefined();
      expect(lock[pkg].dev).toBeUndefined();
    }
  });

  it('.dockerignore keeps local builds and secrets out, and what the build needs in', () => {
    const patterns = readRepoFile('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    // Docker's matching: `**` any depth, `*` within one name; a matched folder takes its contents.
    const toRegExp = (p: string) =>
      new RegExp(
        `^${p
          .replace(/[.+^${}()|[\]\\]/g, '\\$&')
          .replace(/\*\*\//g, '%ANY%')
          .replace(/\*/g, '[^/]*')
          .replace(/\?/g, '[^/]')
          .replace(/%ANY%/g, '(.*/)?')}(/|$)`,
      );
    const ignored = (file: string) => patterns.some((p) => toRegExp(p).test(file));
    for (const file of [
      'node_modules/x',
      'apps/gateway/node_modules/x',
      'dist/x',
      'libs/dal/dist/x',
      '.git/HEAD',
      '.env',
    ]) {
      expect([file, ignored(file)]).toEqual([file, true]);
    }
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.build.json',
      'tsconfig.base.json',
      'tsconfig.build.base.json',
      'libs/dal/tsconfig.lib.json',
      'apps/gateway/tsconfig.app.json',
    ];
    needed.push(
      'apps/gateway/src/main.ts',
      'libs/queue/src/index.ts',
      'docker/entrypoint.sh',
      'docker/healthcheck.js',
    );
    for (const file of needed) expect([file, ignored(file)]).toEqual([file, false]);
  });
});

describe('docker/entrypoint.sh', () => {
  // A stand-in `node` that prints how it was called.
  const bin = mkdtempSync(path.join(tmpdir(), 'entrypoint-'));
  writeFileSync(path.join(bin, 'node'), '#!/bin/sh\necho "$PWD|$*"\n');
  chmodSync(path.join(bin, 'node'), 0o755);
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync('sh', [LAUNCHER, ...args], {
      encoding: 'utf8',
      env: { PATH: `${bin}:/usr/bin:/bin`, ...env },
    });
  const scripts = JSON.parse(readRepoFile('package.json')).scripts as Record<string, string>;
  afterAll(() => rmSync(bin, { recursive: true }));

  it.each(APPS)(
    'is what `npm run start:%s` runs, and starts its built service from the image root',
    (app) => {
      expect(scripts[`start:${app}`]).toBe(`sh docker/entrypoint.sh ${app}`);
      const result = run([app]);
      expect(result.status).toBe(0);
      const [cwd, args] = result.stdout.trim().split('|');
      expect(cwd).toBe(ROOT);
      expect(args).toMatch(new RegExp(`^--enable-source-maps (\\S+ )*dist/apps/${app}/src/main\\.js$`));
    },
  );

  it('starts the services that take uploads with a first heap that a picture’s buffers do not fill', () => {
    const takesUploads: readonly string[] = ['gateway', 'attachment-ingest'];
    for (const app of APPS) {
      const heap = /--initial-old-space-size=(\d+) /.exec(run([app]).stdout)?.[1] ?? null;
      expect({ app, heap }).toEqual({ app, heap: takesUploads.includes(app) ? '256' : null });
    }
  });

  it('runs migrate exactly as its npm script does, from the image root', () => {
    const result = run(['migrate']);
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toBe(`${ROOT}|${scripts['migrate'].replace(/^node /, '')}`);
  });

  it('takes the service from PORTAL_APP when no argument is given, and refuses an unknown one', () => {
    expect(run([], { PORTAL_APP: 'compaction-worker' }).stdout).toContain(
      'dist/apps/compaction-worker/src/main.js',
    );
    const bad = run(['worker']);
    expect(bad.status).toBe(64);
    expect(bad.stderr).toMatch(/usage/);
  });
});

describe('docker/healthcheck.js', () => {
  it('knows each app’s default port', () => {
    const text = readRepoFile('docker/healthcheck.js');
    for (const worker of WORKERS) expect(text).toContain(`'${worker}': ${defaultPort(worker)}`);
    expect(text).toContain(`process.env.PORT || ${defaultPort('gateway')}`);
  });

  it('exits 0 on 200, 1 on 503 and 1 when nothing answers', async () => {
    let status = 200;
    const server = createServer((_, res) => res.writeHead(status).end()).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/health/ready`;
    const check = () =>
      new Promise<number | null>((resolve) =>
        spawn(process.execPath, [path.join(ROOT, 'docker', 'healthcheck.js'), url], { stdio: 'ignore' }).on(
          'exit',
          resolve,
        ),
      );
    try {
      expect(await check()).toBe(0);
      status = 503;
      expect(await check()).toBe(1);
    } finally {
      server.close();
    }
    expect(await check()).toBe(1);
  });
});
