import type {
  AgentView,
  AttachmentManifest,
  ConversationHit,
  ConversationSummary as ConversationListed,
  ConversationView,
  Me,
  MessageView,
  ModelView as PublicModel,
  PostMessageResult,
  Provider,
  SkillView,
  UsageRowDto,
} from '@portal/contracts';
import { EFFORT_LEVELS, type Effort } from '@portal/domain';

/** What the client reads of the gateway's API: the types inferred from the contract's schemas. */
export type {
  AgentView,
  AttachmentManifest,
  ConversationView,
  Effort,
  Me,
  MessageView,
  PostMessageResult,
  Provider,
  SkillView,
};
export type TurnView = ConversationView['turns'][number];
/** A model of GET /v1/models; `compactAt` is read when present (the gateway does not send it yet). */
export type ModelView = PublicModel & { compactAt?: number };
/** A listed conversation; with a search (`?q=`) also where the words were found. */
export type ConversationSummary = ConversationListed & Partial<Pick<ConversationHit, 'snippet'>>;
export type UsageRow = UsageRowDto;
/** A turn's usage rows summed. */
export type UsageTotals = TurnView['usage'];
export const EFFORTS = EFFORT_LEVELS;

const SAFE_METHODS = new Set(['GET', 'HEAD']);

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
