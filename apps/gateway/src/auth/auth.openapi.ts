import type { PathItem, Response } from '../docs/openapi.types';

/** The browser sign-in (API.md "Signing in from a browser") for the OpenAPI document: spread into its `paths`. */

const error = (description: string): Response => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});
const orgId = { name: 'orgId', in: 'path' as const, required: true, schema: { type: 'string' as const } };
const redirect = (description: string): Response => ({ description });

export const AUTH_PATHS: Record<string, PathItem> = {
  '/v1/auth/providers': {
    get: {
      summary: 'The orgs whose people sign in through an identity provider (no auth): for the sign-in page',
      security: [],
      responses: {
        200: {
          description: 'One entry per org with `oidc` in the bootstrap file',
          content: {
            'application/json': {
              schema: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    orgId: { type: 'string' },
                    name: { type: 'string' },
                    loginUrl: { type: 'string' },
                  },
                  required: ['orgId', 'name', 'loginUrl'],
                },
              },
            },
          },
        },
      },
    },
  },
  '/v1/auth/oidc/{orgId}/login': {
    get: {
      summary:
        "Starts the sign-in: redirects to the org's provider (authorization code flow, PKCE S256, state, nonce)",
      description:
        'Sets `portal_sign_in` (HttpOnly, SameSite=Lax, limited to the callback path, 10 minutes), which ties the ' +
        'callback to this browser. The redirect URI is `<origin>/v1/auth/oidc/<orgId>/callback`, the origin as the ' +
        'browser reached the portal (X-Forwarded-Proto behind a proxy): register it with the provider.',
      security: [],
      parameters: [orgId],
      responses: {
        302: redirect("To the provider's authorization endpoint"),
        404: error('`not_found`: the org has no provider'),
        503: error("`unavailable`: the provider's discovery did not answer"),
      },
    },
  },
  '/v1/auth/oidc/{orgId}/callback': {
    get: {
      summary:
        "The provider's redirect back: checks state, nonce and the ID token, opens the session, redirects to /",
      description:
        'The ID token is checked by openid-client: issuer, audience, expiry and signature against the JWKS of the ' +
        "provider. The user is found or created in the org by the token's `sub`, with the role of the org's " +
        '`roleClaim` or its `defaultRole`. Sets `portal_session` (HttpOnly, SameSite=Lax, Path=/, Secure unless on ' +
        'localhost); the session lives in Redis and expires after SESSION_TTL without a request.',
      security: [],
      parameters: [orgId],
      responses: {
        302: redirect('Signed in: to `/`'),
        401: error(
          '`unauthorized`: no pending sign-in from this browser for this org (replayed, expired), or a token refused',
        ),
        403: error('`forbidden`: the user was removed from the bootstrap file'),
      },
    },
  },
  '/v1/auth/logout': {
    post: {
      summary: 'Ends the browser session and clears its cookie (with the cookie: X-Portal-CSRF needed)',
      responses: {
        204: { description: 'Signed out' },
        401: error('`unauthorized`'),
        403: error('`csrf`: the session cookie without its X-Portal-CSRF token'),
      },
    },
  },
};
