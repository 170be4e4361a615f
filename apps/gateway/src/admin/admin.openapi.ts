import type { PathItem, Response } from '../docs/openapi.types';

/** The queue dashboard for the gateway's OpenAPI document: spread into its `paths`. */

const error = (description: string): Response => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

export const ADMIN_PATHS: Record<string, PathItem> = {
  '/admin/queues': {
    get: {
      summary:
        'The queue dashboard (Bull Board), admins of PORTAL_OPERATOR_ORGS only: Bearer key or the browser ' +
        "session cookie (the board's own state-changing requests must come from the portal's Origin)",
      responses: {
        200: { description: 'The dashboard', content: { 'text/html': { schema: { type: 'string' } } } },
        401: error('`unauthorized`: no valid key or session'),
        403: error('`forbidden`: not an admin of an operator org; `csrf`: an action from another origin'),
      },
    },
  },
};
