import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';

/** Facts the deployment files must agree with, read from the code they deploy. */
export const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

export const WORKERS = ['turn-orchestrator', 'attachment-ingest', 'compaction-worker'] as const;
export const APPS = ['gateway', ...WORKERS] as const;
export type App = (typeof APPS)[number];
export type Worker = (typeof WORKERS)[number];

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

function findNumber(file: string, patterns: RegExp[]): number | undefined {
  const text = readRepoFile(file);
  for (const pattern of patterns) {
    const match = pattern.exec(text);
    if (match) return Number(match[1].replace(/_/g, ''));
  }
  return undefined;
}

/** The port an app listens on when nothing overrides it (its config.ts). */
export function defaultPort(app: App): number {
  const variable = app === 'gateway' ? 'PORT' : 'HEALTH_PORT';
  const port = findNumber(`apps/${app}/src/config.ts`, [new RegExp(`'${variable}',\\s*(\\d+)`)]);
  if (port === undefined) throw new Error(`apps/${app}/src/config.ts: no default for ${variable} found`);
  return port;
}

/** How long a worker may take to shut down after SIGTERM (libs/queue worker-boot, or the app's own). */
export function shutdownDeadlineMs(worker: Worker): number {
  const own = findNumber(`apps/${worker}/src/main.ts`, [/shutdownDeadlineMs:\s*([\d_]+)/]);
  const shared = findNumber('libs/queue/src/worker-boot.ts', [
    /SHUTDOWN_DEADLINE_MS\s*=\s*([\d_]+)/,
    /shutdownDeadlineMs\s*\?\?\s*([\d_]+)/,
  ]);
  const deadline = own ?? shared;
  if (deadline === undefined) throw new Error('libs/queue/src/worker-boot.ts: no shutdown deadline found');
  return deadline;
}
