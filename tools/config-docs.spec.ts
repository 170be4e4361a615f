import { readFileSync } from 'node:fs';
import { envVarDocs } from '@portal/contracts';
import { CONFIG_DOCS_FILE, renderConfigDocs, SERVICE_ENV } from './config-docs';

describe('docs/configuration.md', () => {
  it('is what the schemas say now (run `npm run docs:config` after changing one)', () => {
    expect(readFileSync(CONFIG_DOCS_FILE, 'utf8')).toBe(renderConfigDocs());
  });

  it('names every variable of every service with what it does', () => {
    const docs = renderConfigDocs();
    for (const [service, schema] of SERVICE_ENV) {
      const variables = envVarDocs(schema);
      expect(variables.length).toBe(Object.keys(schema.shape).length);
      for (const [name, doc] of variables) {
        expect(doc.description).not.toBe('');
        expect(docs.split(`## ${service}`)[1]).toContain(`| \`${name}\` |`);
      }
    }
    expect(docs).toContain('| `PORT` | `3000` |');
    expect(docs).toContain('| `PORTAL_LIMIT_TURNS_REPLAYED` | `20` |');
  });
});
