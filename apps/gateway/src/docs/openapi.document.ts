import { ADMIN_PATHS } from '../admin/admin.openapi';
import { ATTACHMENT_PATHS } from '../attachments/attachments.openapi';
import { AUTH_PATHS } from '../auth/auth.openapi';
import { BLOCK_KINDS, EFFORT_LEVELS, ERROR_CODES, TURN_STATUSES } from '@portal/domain';
import type { OpenApiDocument, Operation, Parameter, Response, Schema } from './openapi.types';

const ref = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });
const arrayOf = (name: string): Schema => ({ type: 'array', items: ref(name) });
const str: Schema = { type: 'string' };
const nullableStr: Schema = { type: ['string', 'null'] };
const int: Schema = { type: 'integer' };
const bool: Schema = { type: 'boolean' };
const strings: Schema = { type: 'array', items: str };
const object = (properties: Record<string, Schema>, optional: string[] = []): Schema => ({
  type: 'object',
  properties,
  required: Object.keys(properties).filter((k) => !optional.includes(k)),
});

const json = (schema: Schema) => ({ 'application/json': { schema } });

/** The API's error answers, by status; each body is `{ error: { code, message } }`. */
const errors = (...statuses: number[]): Record<string, Response> =>
  Object.fromEntries(
    [401, ...statuses].map((status) => [
      String(status),
      { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: json(ref('Error')) },
    ]),
  );

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: '`validation_failed`: the message names the field',
  401: '`unauthorized`: no valid API key',
  403: '`forbidden`: the role may not do this',
  404: "`not_found`: missing, another org's, or another user's conversation",
  409: 'a conflict: see the operation for the codes',
  422: 'a check refused the request: see the operation for the codes',
};

const ok = (description: string, schema?: Schema) => ({
  description,
  ...(schema && { content: json(schema) }),
});

const pathId = (name: string, description: string): Parameter => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: str,
});
const conversationId = pathId('id', 'Conversation id');
const turnId = pathId('id', 'Turn id');

const op = (summary: string, rest: Omit<Operation, 'summary'>): Operation => ({ summary, ...rest });

const blockSchema: Schema = {
  type: 'object',
  description:
    'A block: `{ id, seq, kind, ... }`; by kind: text { text, narration, steering }, thinking { text }, ' +
    'tool_use { callId, name, arguments }, tool_result { callId, outcome, content, ref }, ' +
    'clarification_request { callId, question, options, answer }, ' +
    'approval_request { callId, name, arguments, approved, note }, ' +
    'compaction { summary (references removed), trigger, coversTurns: { from, to } }.',
  properties: { id: str, seq: int, kind: { type: 'string', enum: [...BLOCK_KINDS] } },
  required: ['id', 'seq', 'kind'],
  additionalProperties: true,
};

const toolSchema = object(
  {
    name: str,
    description: str,
    parameters: { type: 'object', description: 'JSON schema of the arguments' },
    url: { type: 'string', description: 'must match a PORTAL_TOOL_URL_ALLOW prefix' },
    requiresApproval: bool,
  },
  ['requiresApproval'],
);

const mcpServerSchema = object(
  {
    name: { type: 'string', description: 'the model calls its tools `<name>__<tool>`' },
    url: {
      type: 'string',
      description: 'streamable HTTP endpoint; must match a PORTAL_TOOL_URL_ALLOW prefix',
    },
    headersFromEnv: {
      type: 'object',
      additionalProperties: str,
      description: 'header name → the env var of the turn-orchestrator holding its value',
    },
    tools: { type: 'array', items: str, description: "only these of the server's tools (default: all)" },
    requiresApproval: {
      oneOf: [bool, { type: 'array', items: str }],
      description: 'true: every call waits for approval; a list: the calls of these tools',
    },
  },
  ['headersFromEnv', 'tools', 'requiresApproval'],
);

const agentFields: Record<string, Schema> = {
  name: str,
  instructions: str,
  model: { type: 'string', description: 'a model id of the catalogue' },
  effort: { type: 'string', enum: [...EFFORT_LEVELS] },
  skills: { type: 'array', items: str, description: 'bound skills by slug, in catalogue order' },
  tools: { type: 'array', items: ref('AgentTool') },
  mcpServers: { type: 'array', items: ref('AgentMcpServer') },
  compactionGuidance: nullableStr,
  reviewer: {
    type: ['string', 'null'],
    description:
      'model id of the output guardrail: answer and narration text streams sentence by sentence, each ' +
      'once a `review` call passed it; a blocked sentence is never shown and fails the turn ' +
      '`blocked_by_review: <reason>`',
  },
};

const skillFields: Record<string, Schema> = {
  name: str,
  description: { type: 'string', description: 'one sentence: the catalogue line' },
  instructions: str,
  visibility: { type: 'string', enum: ['org', 'private'], default: 'org' },
  status: { type: 'string', enum: ['active', 'inactive'], default: 'active' },
  published: { type: 'boolean', default: false },
};

const turnStatus: Schema = { type: 'string', enum: [...TURN_STATUSES] };

/** The OpenAPI 3.1 document of the gateway, served at /docs/json with a UI at /docs. */
export const OPENAPI_DOCUMENT: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Portal gateway',
    version: '1.0.0',
    description:
      'The HTTP API of the portal turn engine. JSON everywhere; lists are plain arrays; errors are ' +
      '`{ "error": { "code", "message" } }`. Every call but health, metrics and these docs needs ' +
      '`Authorization: Bearer <apiKey>`. Additions to API.md: error codes `request_not_pending` and ' +
      '`conflict` (409); agents show their bound skills as `skills` (slugs); turns show `kind`, and a ' +
      "conversation's turns also their `error`, `model`, `contextTokens` and summed `usage`; " +
      'request answers and cancel answer `{ turnId, status }`.',
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
    schemas: {
      Error: object({
        error: object({ code: { type: 'string', enum: [...ERROR_CODES, 'internal'] }, message: str }),
      }),
      Me: object(
        {
          userId: str,
          orgId: str,
          role: { type: 'string', enum: ['member', 'author', 'admin'] },
          via: { type: 'string', enum: ['apiKey', 'oidc'] },
          name: str,
          csrf: {
            ...str,
            description: 'Browser sessions: the X-Portal-CSRF token of state-changing requests',
          },
        },
        ['name', 'csrf'],
      ),
      Model: object({
        id: str,
        contextWindow: int,
        vision: { oneOf: [object({ maxLongSide: int, maxShortSide: int }), { type: 'null' }] },
        reasoning: bool,
        effortLevels: { type: 'array', items: { type: 'string', enum: [...EFFORT_LEVELS] } },
        price: object({
          inputPerMTok: { type: 'number' },
          outputPerMTok: { type: 'number' },
          cachedInputPerMTok: { type: 'number' },
        }),
      }),
      AgentTool: toolSchema,
      AgentMcpServer: mcpServerSchema,
      Agent: object({ id: str, ...agentFields }),
      NewAgent: object({ id: str, ...agentFields }, [
        'instructions',
        'effort',
        'skills',
        'tools',
        'mcpServers',
        'compactionGuidance',
        'reviewer',
      ]),
      AgentPatch: { ...object(agentFields), required: [] },
      Skill: object({ id: str, slug: str, ownerId: nullableStr, ...skillFields }),
      NewSkill: object({ slug: str, ...skillFields }, ['visibility', 'status', 'published']),
      SkillPatch: { ...object(skillFields), required: [] },
      ConversationSummary: object({
        id: str,
        agentId: str,
        title: nullableStr,
        updatedAt: { type: 'string', format: 'date-time' },
      }),
      ConversationHit: object({
        id: str,
        agentId: str,
        title: nullableStr,
        updatedAt: { type: 'string', format: 'date-time' },
        snippet: { type: 'string', description: 'plain text around the match, at most 200 characters' },
      }),
      Conversation: object({
        id: str,
        agentId: str,
        title: nullableStr,
        turns: {
          type: 'array',
          items: object({
            id: str,
            n: int,
            kind: { type: 'string', enum: ['turn', 'compaction'] },
            status: turnStatus,
            effort: str,
            error: { type: ['string', 'null'], description: 'why a failed or cut-off turn ended' },
            model: str,
            contextTokens: { type: ['integer', 'null'] },
            usage: {
              ...object({ inputTokens: int, outputTokens: int, cachedTokens: int, cost: { type: 'number' } }),
              description: "the turn's usage rows summed (0 without any); cost in USD",
            },
          }),
        },
      }),
      Block: blockSchema,
      Message: object({
        id: str,
        turnId: str,
        role: { type: 'string', enum: ['user', 'assistant'] },
        attachmentIds: strings,
        blocks: arrayOf('Block'),
      }),
      NewMessage: object(
        {
          text: {
            type: 'string',
            description: 'leading `/slug` tokens select skills; `/compact [instructions]` compacts',
          },
          attachmentIds: strings,
          effort: { type: 'string', enum: [...EFFORT_LEVELS], description: "overrides the agent's effort" },
        },
        ['attachmentIds', 'effort'],
      ),
      Turn: object({
        id: str,
        conversationId: str,
        n: int,
        kind: { type: 'string', enum: ['turn', 'compaction'] },
        status: turnStatus,
        effort: str,
        model: str,
        contextTokens: { type: ['integer', 'null'] },
        selectedSkillIds: strings,
        catalogueSkillIds: strings,
        error: nullableStr,
      }),
      TurnAck: object({ turnId: str, status: turnStatus }),
      UsageRow: object({
        kind: { type: 'string', enum: ['turn', 'compaction', 'summary', 'review'] },
        model: str,
        inputTokens: int,
        outputTokens: int,
        cachedTokens: int,
        cost: { type: 'number', description: 'USD' },
      }),
      TraceEntry: object({
        kind: { type: 'string', enum: ['SKILL_SELECT'] },
        skillIds: strings,
        at: { type: 'string', format: 'date-time' },
      }),
      PromptPreview: object({
        model: str,
        contextWindow: int,
        compactAt: { type: 'number', description: 'share of the context window' },
        totalTokens: int,
        layers: {
          type: 'array',
          items: object({
            layer: {
              type: 'string',
              enum: ['portal_floor', 'author', 'selected_skills', 'catalogue', 'memory'],
            },
            tokens: int,
            messages: arrayOf('ChatMessage'),
          }),
        },
      }),
      ChatMessage: {
        type: 'object',
        description:
          'A Chat Completions message exactly as the model receives it: `content` is text, null (an ' +
          'assistant message that only calls tools) or parts (`text`, `image_url`) for a user message ' +
          'with pictures; `tool_calls` on an assistant message, `tool_call_id` on a tool result.',
        properties: {
          role: { type: 'string', enum: ['system', 'user', 'assistant', 'tool'] },
          content: { type: ['string', 'array', 'null'], items: { type: 'object' } },
          tool_calls: { type: 'array', items: { type: 'object' } },
          tool_call_id: str,
        },
        required: ['role', 'content'],
      },
    },
  },
  security: [{ apiKey: [] }, { session: [] }],
  paths: {
    ...ATTACHMENT_PATHS,
    ...ADMIN_PATHS,
    ...AUTH_PATHS,
    '/v1/me': { get: op('The caller', { responses: { 200: ok('The caller', ref('Me')), ...errors() } }) },
    '/v1/models': {
      get: op('The model catalogue, without keys or URLs', {
        responses: { 200: ok('Models', arrayOf('Model')), ...errors() },
      }),
    },
    '/v1/agents': {
      get: op("The org's agents", { responses: { 200: ok('Agents', arrayOf('Agent')), ...errors() } }),
      post: op('Create an agent (authors and admins)', {
        requestBody: { required: true, content: json(ref('NewAgent')) },
        responses: { 201: ok('Created', ref('Agent')), ...errors(400, 403, 409) },
      }),
    },
    '/v1/agents/{id}': {
      get: op('One agent', {
        parameters: [pathId('id', 'Agent id')],
        responses: { 200: ok('The agent', ref('Agent')), ...errors(404) },
      }),
      patch: op('Change an agent (authors and admins)', {
        parameters: [pathId('id', 'Agent id')],
        requestBody: { required: true, content: json(ref('AgentPatch')) },
        responses: { 200: ok('Changed', ref('Agent')), ...errors(400, 403, 404) },
      }),
    },
    '/v1/skills': {
      get: op('The skills the caller can see: org-wide ones and their own private ones', {
        responses: { 200: ok('Skills', arrayOf('Skill')), ...errors() },
      }),
      post: op('Create a skill owned by the caller (authors and admins)', {
        requestBody: { required: true, content: json(ref('NewSkill')) },
        responses: { 201: ok('Created', ref('Skill')), ...errors(400, 403, 409) },
      }),
    },
    '/v1/skills/{id}': {
      get: op('One skill the caller can see', {
        parameters: [pathId('id', 'Skill id')],
        responses: { 200: ok('The skill', ref('Skill')), ...errors(404) },
      }),
      patch: op('Change a skill (authors and admins; the slug never changes)', {
        parameters: [pathId('id', 'Skill id')],
        requestBody: { required: true, content: json(ref('SkillPatch')) },
        responses: { 200: ok('Changed', ref('Skill')), ...errors(400, 403, 404) },
      }),
    },
    '/v1/conversations': {
      get: op("The caller's conversations, most recently updated first; with `q`, those matching it", {
        description:
          'With a non-blank `q` (web search syntax: words, "phrases", -word, or), full-text search over ' +
          "the titles and the messages' text of the caller's conversations (Vietnamese included: words " +
          'keep their tone marks, case is ignored), title matches first, then most relevant; at most 50, ' +
          'each with a `snippet`: plain text around the match.',
        parameters: [{ name: 'q', in: 'query', required: false, schema: { type: 'string', maxLength: 500 } }],
        responses: {
          200: ok('Conversations', {
            oneOf: [arrayOf('ConversationSummary'), arrayOf('ConversationHit')],
          }),
          ...errors(400),
        },
      }),
      post: op('Start a conversation with an agent', {
        requestBody: { required: true, content: json(object({ agentId: str })) },
        responses: { 201: ok('Created', object({ id: str })), ...errors(400, 404) },
      }),
    },
    '/v1/conversations/{id}': {
      get: op('A conversation and its turns', {
        parameters: [conversationId],
        responses: { 200: ok('The conversation', ref('Conversation')), ...errors(404) },
      }),
      patch: op('Rename a conversation (its owner)', {
        parameters: [conversationId],
        requestBody: {
          required: true,
          content: json(object({ title: { type: 'string', minLength: 1, maxLength: 200 } })),
        },
        responses: { 200: ok('The conversation', ref('Conversation')), ...errors(400, 404) },
      }),
      delete: op('Delete a conversation (its owner) with everything it holds', {
        description:
          'An open turn is cut off first (as cancel does). Then the conversation, its turns, messages, ' +
          'blocks, tool results, usage rows, trace entries, its attachments (those uploaded to it, and ' +
          'those uploaded to none that no other conversation carries) with their stored bytes and search ' +
          'index, and its event stream are removed. It answers 404 from then on.',
        parameters: [conversationId],
        responses: { 204: { description: 'Deleted' }, ...errors(404) },
      }),
    },
    '/v1/conversations/{id}/messages': {
      get: op('The transcript for display (summaries without references)', {
        parameters: [conversationId],
        responses: { 200: ok('Messages', arrayOf('Message')), ...errors(404) },
      }),
      post: op('Send a message: opens a turn, steers the running one, or compacts', {
        description:
          'Checks in order: `skill_rejected` (422, names the slug), `attachment_not_found` (422), ' +
          '`model_cannot_see` (422, names the model), `compact_refused` (409, says which rule). While a ' +
          'turn is paused: `turn_paused` (409). While one is queued or running the text steers it.',
        parameters: [conversationId],
        requestBody: { required: true, content: json(ref('NewMessage')) },
        responses: {
          202: ok('Accepted', {
            oneOf: [
              object({ turnId: str, kind: { type: 'string', enum: ['turn', 'compaction'] } }),
              object({ turnId: str, steered: { type: 'boolean', const: true } }),
            ],
          }),
          ...errors(400, 404, 409, 422),
        },
      }),
    },
    '/v1/conversations/{id}/prompt-preview': {
      get: op('What the next model call would read before a new message (authors and admins)', {
        description:
          'Assembled by the code a turn assembles its calls with, without calling a model: each layer ' +
          '(portal_floor, author, selected_skills, catalogue, memory; empty ones left out) with its ' +
          'messages as the next call sends them, in that order, and its tokens. The catalogue is in ' +
          "the agent's bind order, as a turn's snapshot. `totalTokens` is the projected input without " +
          'the new message; tool schemas and framing count to portal_floor.',
        parameters: [conversationId],
        responses: { 200: ok('The preview', ref('PromptPreview')), ...errors(403, 404) },
      }),
    },
    '/v1/conversations/{id}/events': {
      get: op("The conversation's events as Server-Sent Events", {
        description:
          '`id:` is the event stream id, `data:` the event JSON (`type`, `turnId`, …). With `Last-Event-ID` ' +
          '(or `?lastEventId=`) everything retained after it is replayed first; without, the stream starts ' +
          'from now. A comment line is sent every 15 s. For an agent with a `reviewer`, each `text_delta` ' +
          'carries one sentence its review passed.',
        parameters: [
          conversationId,
          { name: 'Last-Event-ID', in: 'header', required: false, schema: str },
          { name: 'lastEventId', in: 'query', required: false, schema: str },
        ],
        responses: {
          200: { description: 'The event stream', content: { 'text/event-stream': { schema: str } } },
          ...errors(400, 404),
        },
      }),
    },
    '/v1/turns/{id}': {
      get: op('A turn', {
        parameters: [turnId],
        responses: { 200: ok('The turn', ref('Turn')), ...errors(404) },
      }),
    },
    '/v1/turns/{id}/usage': {
      get: op("The turn's usage rows", {
        parameters: [turnId],
        responses: { 200: ok('Usage', arrayOf('UsageRow')), ...errors(404) },
      }),
    },
    '/v1/turns/{id}/trace': {
      get: op("The turn's trace entries", {
        parameters: [turnId],
        responses: { 200: ok('Trace', arrayOf('TraceEntry')), ...errors(404) },
      }),
    },
    '/v1/turns/{id}/requests/{blockId}': {
      post: op('Answer a pending clarification or approval request', {
        description:
          '`{ answer }` for a clarification, `{ approved, note? }` for an approval. The turn goes on running. `request_not_pending` (409) when the block is not a pending request.',
        parameters: [turnId, pathId('blockId', 'The request block id')],
        requestBody: {
          required: true,
          content: json({
            oneOf: [object({ answer: str }), object({ approved: bool, note: str }, ['note'])],
          }),
        },
        responses: { 202: ok('Accepted', ref('TurnAck')), ...errors(400, 404, 409) },
      }),
    },
    '/v1/turns/{id}/cancel': {
      post: op('Cut the turn off (a settled turn is left as it is)', {
        parameters: [turnId],
        responses: { 202: ok('Accepted', ref('TurnAck')), ...errors(404) },
      }),
    },
    '/v1/turns/{id}/retry': {
      post: op('Retry the latest turn after it failed or was cut off', {
        description:
          "Opens a new turn with the same person's message (text, attachments, the turn's effort), checked " +
          'and queued like any message. `retry_refused` (409) for any other turn or ending, or once another ' +
          'turn was opened.',
        parameters: [turnId],
        responses: { 202: ok('Accepted', object({ turnId: str })), ...errors(404, 409, 422) },
      }),
    },
    '/health/live': { get: op('Liveness', { security: [], responses: { 200: ok('Alive') } }) },
    '/health/ready': {
      get: op('Readiness: database and Redis', {
        security: [],
        responses: { 200: ok('Ready'), 503: ok('Not ready') },
      }),
    },
    '/metrics': {
      get: op('Prometheus metrics', {
        security: [],
        responses: { 200: { description: 'Metrics', content: { 'text/plain': { schema: str } } } },
      }),
    },
  },
};
