import type { PathItem, Response } from '../docs/openapi.types';

/** The admin endpoints for the gateway's OpenAPI document: spread into its `paths`. */

const error = (description: string): Response => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

export const ADMIN_PATHS: Record<string, PathItem> = {
  '/v1/admin/session': {
    post: {
      summary: "A session for the queue dashboard (admins): sets its cookie in the caller's browser",
      description:
        'Browsers cannot send `Authorization` with the pages and assets of /admin/queues, so an admin ' +
        'calls this from the browser (for example `fetch("/v1/admin/session", { method: "POST", ' +
        'headers: { authorization: "Bearer pk_…" } })`) and then opens /admin/queues. The cookie is ' +
        'HttpOnly, SameSite=Strict, limited to /admin/queues and valid 30 minutes. Tools may call ' +
        '/admin/queues with the Bearer key instead.',
      responses: {
        200: {
          description: 'Session opened; `Set-Cookie: portal_admin_session=…`',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  dashboard: { type: 'string' },
                  expiresAt: { type: 'string', format: 'date-time' },
                },
                required: ['dashboard', 'expiresAt'],
              },
            },
          },
        },
        401: error('`unauthorized`: no valid API key'),
        403: error('`forbidden`: not an admin'),
      },
    },
  },
  '/admin/queues': {
    get: {
      summary: 'The queue dashboard (Bull Board), admins only: Bearer key or the session cookie',
      responses: {
        200: { description: 'The dashboard', content: { 'text/html': { schema: { type: 'string' } } } },
        401: error('`unauthorized`: no valid key or session'),
        403: error('`forbidden`: not an admin'),
      },
    },
  },
};
