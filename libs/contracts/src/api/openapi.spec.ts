import { Validator } from '@seriousme/openapi-schema-validator';
import { BLOCK_KINDS, ERROR_CODES, type Block, type AttachmentManifest } from '@portal/domain';
import type { z } from 'zod';
import { portalEventSchema, type PortalEvent } from '../events';
import type { attachmentManifestSchema } from './attachments.schema';
import type { blockSchema } from './blocks.schema';
import { ERROR_STATUS } from './errors.schema';
import { buildOpenApiDocument, openApiPath, routeErrorCodes } from './openapi';
import { API_ROUTES } from './routes';

// The API's shapes and the domain's types are the same: each assigns to the other.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const blocksMatch: Same<z.output<typeof blockSchema>, Block> = true;
// On the wire an id is a plain string; the domain brands it.
const manifestsMatch: Same<
  z.output<typeof attachmentManifestSchema>,
  Omit<AttachmentManifest, 'id'> & { id: string }
> = true;

const doc = buildOpenApiDocument();
const json = JSON.stringify(doc);

describe('the generated OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(blocksMatch && manifestsMatch).toBe(true);
  });

  it('has one operation for each route of the contract', () => {
    for (const route of API_ROUTES) {
      expect(doc.paths[openApiPath(route.path)]).toHaveProperty([route.method.toLowerCase()]);
    }
    const operations = Object.values(doc.paths).flatMap((item) => Object.keys(item));
    expect(operations).toHaveLength(API_ROUTES.length);
  });

  it('resolves every reference to a component', () => {
    for (const [, name] of json.matchAll(/"#\/components\/schemas\/([^"]+)"/g)) {
      expect(doc.components.schemas).toHaveProperty([name]);
    }
  });

  it('names every error code the API answers, under its status', () => {
    const answered = ERROR_CODES.filter((code) => ERROR_STATUS[code] < 500 || code === 'unavailable');
    const documented = new Set(API_ROUTES.flatMap(routeErrorCodes));
    expect(answered.filter((code) => !documented.has(code))).toEqual([]);
    const meOperation = doc.paths['/v1/me']['get'] as { responses: Record<string, { description: string }> };
    expect(meOperation.responses['401'].description).toContain('`unauthorized`');
    expect(meOperation.responses['429'].description).toContain('`rate_limited`');
  });

  it('describes every event of the stream, attachment_progress included, with every block kind', () => {
    const events = doc.components.schemas['PortalEvent'] as {
      oneOf: { properties: { type: { const: string } } }[];
    };
    const types = events.oneOf.map((event) => event.properties.type.const);
    expect(types).toEqual(portalEventSchema.options.map((o) => o.shape.type.value));
    expect(types).toContain('attachment_progress');
    for (const kind of BLOCK_KINDS) expect(json).toContain(`"const":"${kind}"`);
  });

  it('reads request bodies as zod does: a field with a default may be left out', () => {
    const newAgent = doc.components.schemas['NewAgent'] as { required: string[] };
    const agent = doc.components.schemas['Agent'] as { required: string[] };
    expect(newAgent.required).toEqual(['id', 'name', 'model']);
    expect(agent.required).toContain('effort');
  });
});

describe('the event schema', () => {
  it('accepts what the services publish and refuses a made-up type', () => {
    const event: PortalEvent = { type: 'turn_finished', turnId: 't1', status: 'failed', error: 'boom' };
    expect(portalEventSchema.parse(event)).toEqual(event);
    expect(portalEventSchema.safeParse({ type: 'turn_exploded', turnId: 't1' }).success).toBe(false);
  });
});
