import type { FakeRequest } from '../fake-openai';
import { ApiClient } from './api.client';
import { subscribeEvents } from './event-stream';
import { E2EConversation, E2E_KEYS, e2eModels } from './portal.fixtures';

// --- Compaction end to end: a catalogue that compacts soon, and the summary call answered ------

/**
 * The catalogue of `e2eModels`, but `fast` (the `helper` agent's model) with a small window and
 * its own `compactAt`, so a few large tool results cross it and the turn compacts (AUTO).
 */
export function compactingModels(baseURL: string, fast = { contextWindow: 8_000, compactAt: 0.5 }) {
  const { models } = e2eModels(baseURL);
  return { models: models.map((model) => (model.id === 'fast' ? { ...model, ...fast } : model)) };
}

/** A chat message's content as text (a string, or the text of its parts). */
export const contentText = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p: { text?: string }) => p.text ?? '').join('')
      : '';

/** The summary call (SPEC 5.2): its system prompt, no tools. */
export const isSummaryRequest = (request: FakeRequest) =>
  contentText(request.body?.messages?.[0]?.content).startsWith('You write the summary that replaces');

/** A summary as the model would write it: the required heading, a request, a fact with its ref. */
export function summaryAnswer(request: FakeRequest): string {
  const all = JSON.stringify(request.body.messages);
  const heading =
    /Begin with exactly this line: (Summary of turns 1–\d+)/.exec(all)?.[1] ?? 'Summary of turns 1–1';
  const ref = /\(ref:([A-Za-z0-9_-]+)\)/.exec(all)?.[1] ?? 'tr_0000000000000000';
  return [
    heading,
    '## Requests',
    '- Turn 1: look the figures up',
    '## Decisions',
    '- None.',
    '## Work done',
    '- Looked the figures up.',
    '## Open work',
    '- None.',
    '## Facts',
    `- Q3 revenue was $4.2M (ref:${ref})`,
  ].join('\n');
}

/** The note a replayed summary opens the memory with (SPEC 5.2). */
export const SUMMARY_NOTE = /^\[Summary of earlier conversation — turns 1–(\d+)\]/;

/** The messages after the system ones: the memory, then the turn. */
export const memoryOf = (request: FakeRequest) =>
  (request.body.messages as { role: string; content: unknown }[]).filter((m) => m.role !== 'system');

/** A new conversation of alice with `helper`, its events followed from before its first message. */
export async function openConversation(baseURL: string): Promise<E2EConversation> {
  const api = new ApiClient(baseURL, E2E_KEYS.alice);
  const created = await api.post('/v1/conversations', { agentId: 'helper' });
  if (created.status !== 201)
    throw new Error(`conversation: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  const events = await subscribeEvents(`${baseURL}/v1/conversations/${id}/events`, E2E_KEYS.alice);
  return new E2EConversation(id, api, events);
}
