import type { UsageRowDto } from '@portal/contracts';
import type { AttachmentManifest, Block, TurnStatus } from '@portal/domain';

/** What the client reads of the gateway's API (API.md), as JSON. */
export type Effort = 'low' | 'medium' | 'high';
export const EFFORTS: readonly Effort[] = ['low', 'medium', 'high'];

export interface Me {
  userId: string;
  orgId: string;
  role: string;
  via: 'apiKey' | 'oidc';
  name?: string;
  /** With a browser session: the token state-changing requests carry as X-Portal-CSRF. */
  csrf?: string;
}

/** GET /v1/auth/providers: the orgs whose people sign in through their identity provider. */
export interface Provider {
  orgId: string;
  name: string;
  loginUrl: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD']);

export interface AgentView {
  id: string;
  name: string;
  model: string;
  effort: Effort;
  /** Bound skills (slugs, or ids). */
  skills: string[];
}

export interface SkillView {
  id: string;
  slug: string;
  name: string;
  description: string;
  status: 'active' | 'inactive';
  published: boolean;
}

export interface ModelView {
  id: string;
  contextWindow: number;
  vision: { maxLongSide: number; maxShortSide: number } | null;
  reasoning: boolean;
  effortLevels: Effort[];
  /** Share of the window at which a turn compacts, when the catalogue sets one. */
  compactAt?: number;
}

export interface ConversationSummary {
  id: string;
  agentId: string;
  title: string | null;
  updatedAt: string;
  /** With a search (`?q=`): where the words were found. */
  snippet?: string;
}

export type UsageRow = UsageRowDto;

/** A turn's usage rows summed. */
export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  cost: number;
}

export interface TurnView {
  id: string;
  n: number;
  kind: 'turn' | 'compaction';
  status: TurnStatus;
  effort: Effort | null;
  error?: string | null;
  model?: string;
  /** Input tokens of the turn's latest call on its own model. */
  contextTokens?: number | null;
  usage?: UsageTotals;
}

export interface ConversationView {
  id: string;
  agentId: string;
  title: string | null;
  turns: TurnView[];
}

export interface MessageView {
  id: string;
  turnId: string;
  role: 'user' | 'assistant';
  attachmentIds?: string[];
  blocks: Block[];
}

/** GET /v1/attachments/:id (API.md): the domain's manifest as it is. */
export type { AttachmentManifest };

export type PostMessageResult = { turnId: string; kind?: 'turn' | 'compaction'; steered?: true };

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class Api {
  /** Called once a request answers 401: the key is no longer good. */
  onUnauthorized: () => void = () => undefined;

  /** The session's CSRF token, once `me()` gave it. */
  private csrf: string | null = null;

  /** `apiKey` null: the browser session (its cookie) signs the requests. */
  constructor(readonly apiKey: string | null) {}

  get authorization(): string | null {
    return this.apiKey ? `Bearer ${this.apiKey}` : null;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.authorization) headers['authorization'] = this.authorization;
    else if (this.csrf && !SAFE_METHODS.has(method)) headers['x-portal-csrf'] = this.csrf;
    let payload: BodyInit | undefined;
    if (body instanceof FormData) payload = body;
    else if (body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    if (!res.ok) {
      const error = (json as { error?: { code?: string; message?: string } } | null)?.error;
      if (res.status === 401) this.onUnauthorized();
      throw new ApiError(res.status, error?.code ?? `http_${res.status}`, error?.message ?? res.statusText);
    }
    return json as T;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>('GET', path);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.request<T>('POST', path, body);
  }

  /** The bytes of a resource, for what an element cannot fetch with the API key itself. */
  async blob(path: string): Promise<Blob> {
    const headers: Record<string, string> = {};
    if (this.authorization) headers['authorization'] = this.authorization;
    const res = await fetch(path, { headers });
    if (!res.ok) throw new ApiError(res.status, `http_${res.status}`, res.statusText);
    return res.blob();
  }

  me = async () => {
    const me = await this.get<Me>('/v1/me');
    this.csrf = me.csrf ?? null;
    return me;
  };
  providers = () => this.get<Provider[]>('/v1/auth/providers');
  /** Ends the browser session (nothing to end for an API key). */
  logout = () => this.request<unknown>('POST', '/v1/auth/logout');
  agents = () => this.get<AgentView[]>('/v1/agents');
  agent = (id: string) => this.get<AgentView>(`/v1/agents/${encodeURIComponent(id)}`);
  skills = () => this.get<SkillView[]>('/v1/skills');
  models = () => this.get<ModelView[]>('/v1/models');
  conversations = (query = '') =>
    this.get<ConversationSummary[]>(
      query ? `/v1/conversations?q=${encodeURIComponent(query)}` : '/v1/conversations',
    );
  rename = (id: string, title: string) =>
    this.request<ConversationView>('PATCH', `/v1/conversations/${encodeURIComponent(id)}`, { title });
  deleteConversation = (id: string) =>
    this.request<unknown>('DELETE', `/v1/conversations/${encodeURIComponent(id)}`);
  retry = (turnId: string) => this.post<{ turnId: string }>(`/v1/turns/${encodeURIComponent(turnId)}/retry`);
  attachmentContent = (id: string) => this.blob(`/v1/attachments/${encodeURIComponent(id)}/content`);
  conversation = (id: string) => this.get<ConversationView>(`/v1/conversations/${encodeURIComponent(id)}`);
  messages = (id: string) => this.get<MessageView[]>(`/v1/conversations/${encodeURIComponent(id)}/messages`);
  createConversation = (agentId: string) => this.post<{ id: string }>('/v1/conversations', { agentId });
  send = (conversationId: string, body: { text: string; attachmentIds?: string[]; effort?: Effort }) =>
    this.post<PostMessageResult>(`/v1/conversations/${encodeURIComponent(conversationId)}/messages`, body);
  cancel = (turnId: string) => this.post<unknown>(`/v1/turns/${encodeURIComponent(turnId)}/cancel`);
  answer = (
    turnId: string,
    blockId: string,
    body: { answer: string } | { approved: boolean; note?: string },
  ) =>
    this.post<unknown>(
      `/v1/turns/${encodeURIComponent(turnId)}/requests/${encodeURIComponent(blockId)}`,
      body,
    );
  attachment = (id: string) => this.get<AttachmentManifest>(`/v1/attachments/${encodeURIComponent(id)}`);

  upload(file: File, conversationId: string | null): Promise<AttachmentManifest> {
    const form = new FormData();
    // Fields before the file: a streaming multipart reader sees them when it reaches the file.
    if (conversationId) form.append('conversationId', conversationId);
    form.append('file', file, file.name);
    return this.request<AttachmentManifest>('POST', '/v1/attachments', form);
  }
}
