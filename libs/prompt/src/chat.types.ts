/**
 * The OpenAI Chat Completions request shape, as far as the prompt uses it. Our own types, so this
 * pure library never imports the SDK; they are structurally compatible with its params.
 */
export interface ChatTextPart {
  type: 'text';
  text: string;
}

export interface ChatImagePart {
  type: 'image_url';
  image_url: { url: string };
}

export type ChatContentPart = ChatTextPart | ChatImagePart;

export interface ChatSystemMessage {
  role: 'system';
  content: string;
}

export interface ChatUserMessage {
  role: 'user';
  content: string | ChatContentPart[];
}

export interface ChatToolCall {
  id: string;
  type: 'function';
  /** `arguments` is JSON text. */
  function: { name: string; arguments: string };
}

export interface ChatAssistantMessage {
  role: 'assistant';
  content: string | null;
  tool_calls?: ChatToolCall[];
}

export interface ChatToolMessage {
  role: 'tool';
  tool_call_id: string;
  content: string;
}

export type ChatMessage = ChatSystemMessage | ChatUserMessage | ChatAssistantMessage | ChatToolMessage;

export type JsonSchema = Record<string, unknown>;

export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools: ChatTool[];
}
