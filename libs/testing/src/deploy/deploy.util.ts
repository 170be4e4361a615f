import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** Facts the deployment files must agree with, read from the code they deploy. */
export const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

export const WORKERS = ['turn-orchestrator', 'attachment-ingest', 'compaction-worker'] as const;
export const APPS = ['gateway', ...WORKERS] as const;
export type App = (typeof APPS)[number];
export type Worker = (typeof WORKERS)[number];

/** The image's ENTRYPOINT, which starts every service with its Node flags; also `npm start`'s. */
export const LAUNCHER = path.join(ROOT, 'docker', 'entrypoint.sh');

/** Starts a built service as the image does, from the repository root. */
export function launchService(app: App, options: Omit<SpawnOptions, 'cwd'>): ChildProcess {
  return spawn('/bin/sh', [LAUNCHER, app], { ...options, cwd: ROOT });
}

export function readRepoFile(file: string): string {
  return readFileSync(path.join(ROOT, file), 'utf8');
}

// Parsed YAML: any shape, checked field by field.
export type Doc = Record<string, any>;

/** Every document of a YAML file; a syntax error throws naming the file. */
export function readYamlDocs(file: string): Doc[] {
  return parseYamlDocs(readFileSync(file, 'utf8'), file);
}

export function parseYamlDocs(text: string, source: string): Doc[] {
  const docs = parseAllDocuments(text, { merge: true });
  return docs.flatMap((doc) => {
    if (doc.errors.length) throw new Error(`${source}: ${doc.errors[0].message}`);
    const value = doc.toJS();
    return value === null || value === undefined ? [] : [value as Doc];
  });
}

/**
 * A service's default for a numeric variable, as docs/configuration.md gives it: the page is
 * generated from the services' env schemas, and a test keeps it so.
 */
function configDefault(app: App, variable: string): number {
  const section = readRepoFile('docs/configuration.md')
    .split(/^## /m)
    .find((part) => part.startsWith(`${app}\n`));
  const match = section && new RegExp(`^\\| \`${variable}\`\\s*\\| \`(\\d+)\``, 'm').exec(section);
  if (!match) throw new Error(`docs/configuration.md: no default of ${variable} for ${app}`);
  return Number(match[1]);
}

/** The port an app listens on when nothing overrides it. */
export function defaultPort(app: App): number {
  return configDefault(app, app === 'gateway' ? 'PORT' : 'HEALTH_PORT');
}

/** How long a worker may take to shut down after SIGTERM. */
export function shutdownDeadlineMs(worker: Worker): number {
  return configDefault(worker, 'SHUTDOWN_DEADLINE_MS');
}
