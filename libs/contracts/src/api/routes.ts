import { z } from 'zod';
import type { ErrorCode } from '@portal/domain';
import { portalEventSchema } from '../events';
import { meSchema, modelSchema, providerSchema } from './account.schema';
import { agentPatchSchema, agentSchema } from './agents.schema';
import { attachmentFormSchema, attachmentManifestSchema, attachmentUploadSchema } from './attachments.schema';
import {
  conversationHitSchema,
  conversationSchema,
  conversationSummarySchema,
  createConversationSchema,
  renameConversationSchema,
  createdSchema,
  messageSchema,
} from './conversations.schema';
import { postMessageResultSchema, postMessageSchema } from './messages.schema';
import { promptPreviewSchema } from './prompt-preview.schema';
import { skillPatchSchema, skillSchema, skillViewSchema } from './skills.schema';
import {
  requestAnswerSchema,
  retrySchema,
  traceEntrySchema,
  turnAckSchema,
  turnSchema,
  usageRowSchema,
} from './turns.schema';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A body or an answer: its schema, the name it has in the OpenAPI components, its media type. */
export interface Payload {
  name: string;
  schema: z.ZodType;
  /** `application/json` unless said. */
  contentType?: string;
}

/** One route of the gateway, as the OpenAPI document at /docs shows it. */
export interface ApiRoute {
  method: HttpMethod;
  /** Fastify's form: `:name` for a path parameter. */
  path: string;
  summary: string;
  description?: string;
  /** No API key or session needed. */
  open?: true;
  /** Descriptions of the path parameters (each is a string). */
  params?: Record<string, string>;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Payload;
  status: number;
  /** What a success answers: a payload, or just its description (a redirect, 204). */
  response: Payload | string;
  /**
   * The error codes this route answers besides the ones every route of its kind may: `unauthorized`,
   * `rate_limited` and `unavailable` on authenticated routes, `csrf` on their state changes,
   * `validation_failed` with a body.
   */
  errors?: readonly ErrorCode[];
}

const json = (name: string, schema: z.ZodType): Payload => ({ name, schema });
const text = (name: string, contentType: string): Payload => ({ name, schema: z.string(), contentType });

const AGENT_ID = { id: 'Agent id' };
const SKILL_ID = { id: 'Skill id' };
const CONVERSATION_ID = { id: 'Conversation id' };
const TURN_ID = { id: 'Turn id' };

/**
 * Every route the gateway serves. The OpenAPI document is generated from this list, and a test
 * checks it against the routes Fastify registered: a new route needs one entry here.
 */
export const API_ROUTES: readonly ApiRoute[] = [
  { method: 'GET', path: '/v1/me', summary: 'The caller', status: 200, response: json('Me', meSchema) },
  {
    method: 'GET',
    path: '/v1/models',
    summary: 'The model catalogue, without keys or URLs',
    status: 200,
    response: json('ModelList', z.array(modelSchema)),
  },
  {
    method: 'GET',
    path: '/v1/agents',
    summary: "The org's agents",
    status: 200,
    response: json('AgentList', z.array(agentSchema)),
  },
  {
    method: 'POST',
    path: '/v1/agents',
    summary: 'Create an agent (authors and admins)',
    body: json('NewAgent', agentSchema),
    status: 201,
    response: json('Agent', agentSchema),
    errors: ['forbidden', 'conflict'],
  },
  {
    method: 'GET',
    path: '/v1/agents/:id',
    summary: 'One agent',
    params: AGENT_ID,
    status: 200,
    response: json('Agent', agentSchema),
    errors: ['not_found'],
  },
  {
    method: 'PATCH',
    path: '/v1/agents/:id',
    summary: 'Change an agent (authors and admins)',
    params: AGENT_ID,
    body: json('AgentPatch', agentPatchSchema),
    status: 200,
    response: json('Agent', agentSchema),
    errors: ['forbidden', 'not_found'],
  },
  {
    method: 'GET',
    path: '/v1/skills',
    summary: 'The skills the caller can see: org-wide ones and their own private ones',
    status: 200,
    response: json('SkillList', z.array(skillViewSchema)),
  },
  {
    method: 'POST',
    path: '/v1/skills',
    summary: 'Create a skill owned by the caller (authors and admins)',
    body: json('NewSkill', skillSchema),
    status: 201,
    response: json('Skill', skillViewSchema),
    errors: ['forbidden', 'conflict'],
  },
  {
    method: 'GET',
    path: '/v1/skills/:id',
    summary: 'One skill the caller can see',
    params: SKILL_ID,
    status: 200,
    response: json('Skill', skillViewSchema),
    errors: ['not_found'],
  },
  {
    method: 'PATCH',
    path: '/v1/skills/:id',
    summary: 'Change a skill (authors and admins; the slug never changes)',
    params: SKILL_ID,
    body: json('SkillPatch', skillPatchSchema),
    status: 200,
    response: json('Skill', skillViewSchema),
    errors: ['forbidden', 'not_found'],
  },
  {
    method: 'POST',
    path: '/v1/attachments',
    summary: 'Upload an attachment',
    description:
      'The kind is decided once from the bytes (never the name or the content type): PNG, JPEG, WebP, GIF ' +
      'pictures; PDF, plain text, markdown, CSV, JSON (UTF-8) documents. It is read in the background; ' +
      "with `conversationId`, progress reaches that conversation's events as " +
      "`attachment_progress { attachment: <manifest> }`, and a picture is reduced to the limits of its agent's model. " +
      '`too_large`: over ATTACHMENT_MAX_BYTES; `unsupported_type`: empty, binary of another type, or text with a NUL byte.',
    body: { name: 'AttachmentForm', schema: attachmentFormSchema, contentType: 'multipart/form-data' },
    status: 201,
    response: json('AttachmentUpload', attachmentUploadSchema),
    errors: ['not_found', 'too_large', 'unsupported_type'],
  },
  {
    method: 'GET',
    path: '/v1/attachments/:id',
    summary: "The manifest of one of the caller's attachments, with its current status",
    params: { id: 'Attachment id' },
    status: 200,
    response: json('AttachmentManifest', attachmentManifestSchema),
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/attachments/:id/content',
    summary: "One of the caller's pictures as its model reads it",
    description:
      'The copy ingest made (the size the manifest names), reduced to the limits of the model of the ' +
      "conversation's agent and re-encoded in the picture's format without EXIF or other metadata; never " +
      'the original. `Cache-Control: private`. A document has no content here (its bytes are not served ' +
      'from the portal: its manifest is its preview), nor has a picture not read yet.',
    params: { id: 'Attachment id' },
    status: 200,
    response: text('Picture', 'image/*'),
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/conversations',
    summary: "The caller's conversations, most recently updated first; with `q`, those matching it",
    description:
      'With a non-blank `q` (web search syntax: words, "phrases", -word, or), full-text search over ' +
      "the titles and the messages' text of the caller's conversations (Vietnamese included: words " +
      'keep their tone marks, case is ignored), title matches first, then most relevant; at most 50, ' +
      'each with a `snippet`: plain text around the match.',
    query: { q: 'search text (at most 500 characters); blank or absent lists them all' },
    status: 200,
    response: json(
      'ConversationList',
      z.union([z.array(conversationSummarySchema), z.array(conversationHitSchema)]),
    ),
    errors: ['validation_failed'],
  },
  {
    method: 'POST',
    path: '/v1/conversations',
    summary: 'Start a conversation with an agent',
    body: json('NewConversation', createConversationSchema),
    status: 201,
    response: json('Created', createdSchema),
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/conversations/:id',
    summary: 'A conversation and its turns',
    params: CONVERSATION_ID,
    status: 200,
    response: json('Conversation', conversationSchema),
    errors: ['not_found'],
  },
  {
    method: 'PATCH',
    path: '/v1/conversations/:id',
    summary: 'Rename a conversation (its owner)',
    params: CONVERSATION_ID,
    body: json('ConversationRename', renameConversationSchema),
    status: 200,
    response: json('Conversation', conversationSchema),
    errors: ['not_found'],
  },
  {
    method: 'DELETE',
    path: '/v1/conversations/:id',
    summary: 'Delete a conversation (its owner) with everything it holds',
    description:
      'An open turn is cut off first (as cancel does). Then the conversation, its turns, messages, ' +
      'blocks, tool results, usage rows, trace entries, its attachments (those uploaded to it, and ' +
      'those uploaded to none that no other conversation carries) with their stored bytes and search ' +
      'index, and its event stream are removed. It answers 404 from then on.',
    params: CONVERSATION_ID,
    status: 204,
    response: 'Deleted',
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/conversations/:id/messages',
    summary: 'The transcript for display (summaries without references)',
    params: CONVERSATION_ID,
    status: 200,
    response: json('MessageList', z.array(messageSchema)),
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/conversations/:id/messages',
    summary: 'Send a message: opens a turn, steers the running one, or compacts',
    description:
      'Checks in order: `skill_rejected` (names the slug), `attachment_not_found`, `model_cannot_see` ' +
      '(names the model), `compact_refused` (says which rule). While a turn is paused: `turn_paused`. ' +
      'While one is queued or running the text steers it.',
    params: CONVERSATION_ID,
    body: json('NewMessage', postMessageSchema),
    status: 202,
    response: json('MessageAccepted', postMessageResultSchema),
    errors: [
      'not_found',
      'skill_rejected',
      'attachment_not_found',
      'model_cannot_see',
      'compact_refused',
      'turn_paused',
    ],
  },
  {
    method: 'GET',
    path: '/v1/conversations/:id/prompt-preview',
    summary: 'What the next model call would read before a new message (authors and admins)',
    description:
      'Assembled by the code a turn assembles its calls with, without calling a model: each layer ' +
      '(portal_floor, author, selected_skills, catalogue, memory; empty ones left out) with its ' +
      'messages as the next call sends them, in that order, and its tokens. The catalogue is in ' +
      "the agent's bind order, as a turn's snapshot. `totalTokens` is the projected input without " +
      'the new message; tool schemas and framing count to portal_floor.',
    params: CONVERSATION_ID,
    status: 200,
    response: json('PromptPreview', promptPreviewSchema),
    errors: ['forbidden', 'not_found'],
  },
  {
    method: 'GET',
    path: '/v1/conversations/:id/events',
    summary: "The conversation's events as Server-Sent Events",
    description:
      '`id:` is the event stream id, `data:` one event as JSON (`type`, `turnId`, …; the schema below). With ' +
      '`Last-Event-ID` (or `?lastEventId=`) everything retained after it is replayed first; without, the stream ' +
      'starts from now. A comment line is sent every 15 s (`SSE_HEARTBEAT`) while nothing else is. A client ' +
      'that leaves more than `SSE_MAX_BUFFER_BYTES` unread is disconnected: it reconnects with ' +
      '`Last-Event-ID` and misses nothing. A user holds at most `SSE_MAX_PER_USER` open streams on a ' +
      'gateway: 429 `too_many_streams` beyond. For an agent with a `reviewer`, each `text_delta` ' +
      'carries one sentence its review passed.',
    params: CONVERSATION_ID,
    headers: { 'Last-Event-ID': 'replay what came after this stream id' },
    query: { lastEventId: 'the same, for clients that cannot set headers' },
    status: 200,
    response: { name: 'PortalEvent', schema: portalEventSchema, contentType: 'text/event-stream' },
    errors: ['validation_failed', 'not_found', 'too_many_streams'],
  },
  {
    method: 'GET',
    path: '/v1/turns/:id',
    summary: 'A turn',
    params: TURN_ID,
    status: 200,
    response: json('Turn', turnSchema),
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/turns/:id/usage',
    summary: "The turn's usage rows",
    params: TURN_ID,
    status: 200,
    response: json('UsageList', z.array(usageRowSchema)),
    errors: ['not_found'],
  },
  {
    method: 'GET',
    path: '/v1/turns/:id/trace',
    summary: "The turn's trace entries",
    params: TURN_ID,
    status: 200,
    response: json('TraceList', z.array(traceEntrySchema)),
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/turns/:id/requests/:blockId',
    summary: 'Answer a pending clarification or approval request',
    description:
      '`{ answer }` for a clarification, `{ approved, note? }` for an approval. The turn goes on running. ' +
      '`request_not_pending` when the block is not a pending request.',
    params: { ...TURN_ID, blockId: 'The request block id' },
    body: json('RequestAnswer', requestAnswerSchema),
    status: 202,
    response: json('TurnAck', turnAckSchema),
    errors: ['not_found', 'request_not_pending', 'invalid_transition'],
  },
  {
    method: 'POST',
    path: '/v1/turns/:id/cancel',
    summary: 'Cut the turn off (a settled turn is left as it is)',
    params: TURN_ID,
    status: 202,
    response: json('TurnAck', turnAckSchema),
    errors: ['not_found'],
  },
  {
    method: 'POST',
    path: '/v1/turns/:id/retry',
    summary: 'Retry the latest turn after it failed or was cut off',
    description:
      "Opens a new turn with the same person's message (text, attachments, the turn's effort), checked " +
      'and queued like any message. `retry_refused` for any other turn or ending, or once another ' +
      'turn was opened.',
    params: TURN_ID,
    status: 202,
    response: json('RetryAccepted', retrySchema),
    errors: ['not_found', 'retry_refused', 'skill_rejected', 'attachment_not_found', 'model_cannot_see'],
  },
  {
    method: 'GET',
    path: '/v1/auth/providers',
    summary: 'The orgs whose people sign in through an identity provider: for the sign-in page',
    open: true,
    status: 200,
    response: json('ProviderList', z.array(providerSchema)),
  },
  {
    method: 'GET',
    path: '/v1/auth/oidc/:orgId/login',
    summary:
      "Starts the sign-in: redirects to the org's provider (authorization code flow, PKCE S256, state, nonce)",
    description:
      'Sets `portal_sign_in` (HttpOnly, SameSite=Lax, limited to the callback path, 10 minutes), which ties the ' +
      'callback to this browser. The redirect URI is `<origin>/v1/auth/oidc/<orgId>/callback`, the origin as the ' +
      'browser reached the portal (X-Forwarded-Proto behind a proxy): register it with the provider. ' +
      "`unavailable`: the provider's discovery did not answer.",
    open: true,
    params: { orgId: 'The org' },
    status: 302,
    response: "To the provider's authorization endpoint",
    errors: ['not_found', 'unavailable'],
  },
  {
    method: 'GET',
    path: '/v1/auth/oidc/:orgId/callback',
    summary:
      "The provider's redirect back: checks state, nonce and the ID token, opens the session, redirects to /",
    description:
      'The ID token is checked by openid-client: issuer, audience, expiry and signature against the JWKS of the ' +
      "provider. The user is found or created in the org by the token's `sub`, with the role of the org's " +
      '`roleClaim` or its `defaultRole`. Sets `portal_session` (HttpOnly, SameSite=Lax, Path=/, Secure unless on ' +
      'localhost); the session lives in Redis and expires after SESSION_TTL without a request. `unauthorized`: no ' +
      'pending sign-in from this browser for this org (replayed, expired), or a token refused; `forbidden`: the ' +
      'user was removed from the bootstrap file.',
    open: true,
    params: { orgId: 'The org' },
    status: 302,
    response: 'Signed in: to `/`',
    errors: ['unauthorized', 'forbidden'],
  },
  {
    method: 'POST',
    path: '/v1/auth/logout',
    summary: 'Ends the browser session and clears its cookie (with the cookie: X-Portal-CSRF needed)',
    status: 204,
    response: 'Signed out',
  },
  {
    method: 'GET',
    path: '/admin/queues',
    summary:
      'The queue dashboard (Bull Board), admins of PORTAL_OPERATOR_ORGS only: Bearer key or the browser ' +
      "session cookie (the board's own state-changing requests must come from the portal's Origin)",
    status: 200,
    response: text('QueueBoard', 'text/html'),
    errors: ['forbidden', 'csrf'],
  },
  {
    method: 'GET',
    path: '/health/live',
    summary: 'Liveness',
    open: true,
    status: 200,
    response: json('Liveness', z.object({ status: z.string() })),
  },
  {
    method: 'GET',
    path: '/health/ready',
    summary: 'Readiness: database and Redis (503 with the same body when one does not answer)',
    open: true,
    status: 200,
    response: json(
      'Readiness',
      z.object({ status: z.string(), checks: z.object({ database: z.boolean(), redis: z.boolean() }) }),
    ),
  },
  {
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus metrics',
    open: true,
    status: 200,
    response: text('Metrics', 'text/plain'),
  },
];
