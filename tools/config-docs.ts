import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { envVarDocs } from '@portal/contracts';
import { DEFAULT_LIMITS } from '@portal/prompt';
import { attachmentIngestEnv } from '../apps/attachment-ingest/src/config';
import { compactionWorkerEnv } from '../apps/compaction-worker/src/config';
import { gatewayEnv } from '../apps/gateway/src/config';
import { turnOrchestratorEnv } from '../apps/turn-orchestrator/src/config';

/** Each service and the schema its main reads the environment with. */
export const SERVICE_ENV: [service: string, schema: z.ZodObject][] = [
  ['gateway', gatewayEnv],
  ['turn-orchestrator', turnOrchestratorEnv],
  ['attachment-ingest', attachmentIngestEnv],
  ['compaction-worker', compactionWorkerEnv],
];

export const CONFIG_DOCS_FILE = path.resolve(__dirname, '..', 'docs', 'configuration.md');

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** docs/configuration.md: every variable of every service, its default and what it does. */
export function renderConfigDocs(): string {
  const lines = [
    '# Configuration',
    '',
    "<!-- Generated from the services' env schemas by `npm run docs:config`: edit the schemas, not this file. -->",
    '',
    'Every service reads its environment once, at start, with one zod schema (`gatewayEnv`,',
    '`turnOrchestratorEnv`, … in `apps/<service>/src/config.ts`, built from the shared parts in',
    '`libs/contracts/src/config`). Unset or empty means the default; a bad value stops the service with',
    'a message naming the variable. Under `npm start`, `<SERVICE>_HEALTH_PORT` (for example',
    "`TURN_ORCHESTRATOR_HEALTH_PORT`) sets one worker's `HEALTH_PORT`.",
  ];
  for (const [service, schema] of SERVICE_ENV) {
    lines.push('', `## ${service}`, '', '| Variable | Default | What it does |', '| --- | --- | --- |');
    for (const [name, doc] of envVarDocs(schema)) {
      const fallback =
        doc.default === undefined ? 'unset' : doc.default === '' ? 'empty' : `\`${doc.default}\``;
      lines.push(`| \`${name}\` | ${fallback} | ${cell(doc.description)} |`);
    }
  }
  lines.push(
    '',
    '## Prompt limits (every service)',
    '',
    'Each number of the prompt rules is overridable as `PORTAL_LIMIT_<NAME>`; a `PORTAL_LIMIT_` variable',
    'that names no limit stops the service. What each one does is in `libs/prompt/src/limits.ts`.',
    '',
    '| Variable | Default |',
    '| --- | --- |',
    ...Object.entries(DEFAULT_LIMITS).map(([name, value]) => `| \`PORTAL_LIMIT_${name}\` | \`${value}\` |`),
    '',
  );
  return lines.join('\n');
}

if (require.main === module) {
  writeFileSync(CONFIG_DOCS_FILE, renderConfigDocs());
  console.log(`wrote ${path.relative(process.cwd(), CONFIG_DOCS_FILE)}`);
}
