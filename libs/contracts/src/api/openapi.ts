import { z } from 'zod';
import type { ErrorCode } from '@portal/domain';
import { blockSchema } from './blocks.schema';
import { ERROR_STATUS, errorBodySchema } from './errors.schema';
import { API_ROUTES, type ApiRoute, type Payload } from './routes';

type JsonSchema = Record<string, unknown>;
type Operation = Record<string, unknown>;

const COMPONENT = '#/components/schemas/';

/** `/v1/turns/:id` as OpenAPI writes it: `/v1/turns/{id}`. */
export function openApiPath(fastifyPath: string): string {
  return fastifyPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** The codes a route may answer: its own, and those every route of its kind may. */
export function routeErrorCodes(route: ApiRoute): ErrorCode[] {
  const codes = new Set<ErrorCode>(route.errors);
  if (!route.open) {
    for (const code of ['unauthorized', 'rate_limited', 'unavailable'] as const) codes.add(code);
    if (route.method !== 'GET') codes.add('csrf');
  }
  if (route.body) codes.add('validation_failed');
  return [...codes];
}

/**
 * The named payloads as JSON Schema (2020-12, OpenAPI 3.1's dialect), by zod. Bodies are converted
 * as zod reads them (defaults make a field optional), answers as the gateway writes them.
 */
function components(payloads: Payload[], io: 'input' | 'output'): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const { name, schema } of payloads) {
    const known = registry.get(schema);
    if (known && known.id !== name) throw new Error(`One schema under two names: ${known.id}, ${name}`);
    if (!known) registry.add(schema, { id: name });
  }
  const { schemas } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    uri: (id) => COMPONENT + id,
    unrepresentable: 'any',
  });
  return Object.fromEntries(
    Object.entries(schemas).map(([name, { $schema: _s, $id: _i, ...schema }]) => [name, schema]),
  );
}

function content(payload: Payload) {
  return { [payload.contentType ?? 'application/json']: { schema: { $ref: COMPONENT + payload.name } } };
}

function parameters(route: ApiRoute) {
  const list = (where: 'path' | 'query' | 'header', entries: Record<string, string> = {}) =>
    Object.entries(entries).map(([name, description]) => ({
      name,
      in: where,
      required: where === 'path',
      description,
      schema: { type: 'string' },
    }));
  const inPath = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
  const described = Object.fromEntries(inPath.map((name) => [name, route.params?.[name] ?? name]));
  return [...list('path', described), ...list('query', route.query), ...list('header', route.headers)];
}

function errorResponses(route: ApiRoute) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of routeErrorCodes(route)) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, codes]) => [
      String(status),
      {
        description: codes.map((code) => `\`${code}\``).join(', '),
        content: { 'application/json': { schema: { $ref: COMPONENT + 'Error' } } },
      },
    ]),
  );
}

function operation(route: ApiRoute): Operation {
  const params = parameters(route);
  const success =
    typeof route.response === 'string'
      ? { description: route.response }
      : { description: route.response.name, content: content(route.response) };
  return {
    summary: route.summary,
    ...(route.description && { description: route.description }),
    ...(params.length > 0 && { parameters: params }),
    ...(route.body && { requestBody: { required: true, content: content(route.body) } }),
    responses: { [String(route.status)]: success, ...errorResponses(route) },
    ...(route.open && { security: [] }),
  };
}

/** The OpenAPI 3.1 document of the gateway (served at /docs/json, with a UI at /docs), from API_ROUTES. */
export function buildOpenApiDocument(routes: readonly ApiRoute[] = API_ROUTES) {
  const paths: Record<string, Record<string, Operation>> = {};
  for (const route of routes) {
    const path = openApiPath(route.path);
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route) };
  }
  const bodies = routes.flatMap((r) => (r.body ? [r.body] : []));
  const answers = routes.flatMap((r) => (typeof r.response === 'string' ? [] : [r.response]));
  const inputs = components(bodies, 'input');
  const shared = [
    { name: 'Error', schema: errorBodySchema },
    { name: 'Block', schema: blockSchema },
  ];
  const outputs = components([...shared, ...answers], 'output');
  const clash = Object.keys(inputs).find((name) => name in outputs);
  if (clash) throw new Error(`A body and an answer are both named ${clash}`);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Portal gateway',
      version: '1.0.0',
      description:
        'The HTTP API of the portal turn engine. JSON everywhere; lists are plain arrays; errors are ' +
        '`{ "error": { "code", "message" } }`. Every call but health, metrics, these docs and the sign-in ' +
        'needs `Authorization: Bearer <apiKey>` or a browser session. Generated from the zod schemas of ' +
        '`@portal/contracts`, which the gateway validates with.',
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'An API key `pk_…`' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'portal_session',
          description:
            'A browser session (GET /v1/auth/oidc/{orgId}/login); state-changing requests add X-Portal-CSRF',
        },
      },
      schemas: { ...inputs, ...outputs },
    },
    security: [{ apiKey: [] }, { session: [] }],
    paths,
  };
}
