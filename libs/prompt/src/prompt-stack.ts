import type { Message, MemoryWindow } from '@portal/domain';
import { joinParts, planAttachments, segmentParts, type AttachmentsById } from './attachments';
import type { ChatMessage, ChatRequest, ChatTool } from './chat.types';
import type { Limits } from './limits';
import { conversationEntries, userSegments, type Entry, type EntryLayer, type NewMessage } from './memory';
import { renderCatalogue, type CatalogueEntry } from './skills.util';
import { FRAMING, messageTokens, sharedTokenCounter, toolTokens, type TokenCounter } from './tokens';
import { BUILTIN_TOOL_NAMES, buildTools, type HttpToolSpec } from './tools';

/** SPEC section 3: the prompt stack every model call of a turn reads. */

export interface SelectedSkill {
  slug: string;
  name: string;
  instructions: string;
}

export interface PromptModel {
  contextWindow: number;
  /** The provider's picture limits; null when the model cannot see. */
  vision: { maxLongSide: number; maxShortSide: number } | null;
  reasoning: boolean;
}

export interface AssembleInput {
  /** Who the assistant is and how it talks (portal configuration). */
  portalFloor: string;
  agent: {
    instructions: string;
    httpTools: readonly HttpToolSpec[];
    /** The MCP tools the turn offers, and the servers that could not be reached when it started. */
    mcp?: { tools: readonly HttpToolSpec[]; unavailable: readonly string[] };
  };
  /** The `/slug`-selected skills in the order typed. */
  selectedSkills: readonly SelectedSkill[];
  /** The turn's catalogue snapshot, selected skills already left out. */
  catalogue: readonly CatalogueEntry[];
  window: MemoryWindow;
  /** Null for a preview: what a call reads before a message arrives. */
  newMessage: NewMessage | null;
  /** The current turn after its opening user message. */
  currentTurn: readonly Message[];
  attachments: AttachmentsById;
  model: PromptModel;
  limits: Limits;
  /** Defaults to the process-wide counter. */
  tokenCounter?: TokenCounter;
}

export type LayerName =
  'portal_floor' | 'author' | 'selected_skills' | 'catalogue' | 'memory' | 'new_message';

export interface LayerReport {
  layer: LayerName;
  tokens: number;
  /** The layer's messages: the very objects of `messages`, so a preview shows what a call sends. */
  messages: ChatMessage[];
}

export interface AssembledPrompt extends ChatRequest {
  /** All six layers in order, empty ones without messages. Tool schemas and reply priming count to layer 1. */
  layers: LayerReport[];
  /** The projected input: the sum of the layers. */
  totalTokens: number;
}

export function runtimeContract(tools: readonly ChatTool[], unreachable: readonly string[] = []): string {
  const builtin = new Set<string>(BUILTIN_TOOL_NAMES);
  const own = tools.map((t) => t.function.name).filter((name) => !builtin.has(name));
  const missing =
    unreachable.length > 0
      ? `Unreachable tool servers. The MCP servers ${unreachable.join(', ')} could not be reached when this turn started: their tools are not offered in this turn. Say so if the person needs them.`
      : '';
  return [
    '## Runtime contract',
    "You run inside the portal's agent runtime. Every request you receive is rebuilt from the conversation's transcript.",
    `Tools. ${own.length > 0 ? `Besides the agent's own tools (${own.join(', ')}), you` : 'You'} have:
- load_skill(slug): load the instructions of a skill from the skill catalogue when it applies.
- read_document(attachment_id, page?, offset?): read a document attachment page by page; pages count from 1.
- search_attachments(query, attachment_ids?): search the text of the conversation's documents.
- read_tool_result(ref): fetch the whole result of an earlier tool call by its reference.
- ask_clarification(question, options?): ask the person and wait for the answer, only when you cannot go on without it.`,
    missing,
    'References. A replayed tool result may be cut short and end with "[cut; whole result: ref:<id>]": read_tool_result fetches it whole. Results of older turns are not replayed; "[result not replayed; outcome: …]" keeps only how the call ended. A summary of the earlier conversation keeps the references of the facts it holds.',
    'Attachments. An attachment appears as a manifest headed "[Attachment <id>: <filename> (<type>, document|picture)]", with its reading progress, unreadable pages and first headings. A short finished document comes with its whole text; read a longer one with read_document and search it with search_attachments, by its attachment id. A picture is shown to you at the reduced size its manifest names; one whose manifest says it is gone or not shown cannot be seen now.',
    'The answer. Only text you write without calling a tool is your answer to the person. Thinking, tool calls and text written alongside tool calls are not the answer and are not kept for later turns.',
    'Precedence. Your instructions come in layers, in this order: portal floor, author instructions, selected skills, skill catalogue (a skill you load). Where they conflict, the later layer wins.',
  ]
    .filter((s) => s !== '')
    .join('\n\n');
}

/** Layer 1: the portal floor and the runtime contract; never empty. */
export function portalFloorLayer(
  portalFloor: string,
  tools: readonly ChatTool[],
  unreachable: readonly string[] = [],
): string {
  return ['# Portal floor', portalFloor.trim(), runtimeContract(tools, unreachable)]
    .filter((s) => s !== '')
    .join('\n\n');
}

/** Layer 2: the agent's instructions; null when there are none. */
export function authorLayer(instructions: string): string | null {
  return instructions.trim() === '' ? null : `# Author instructions\n\n${instructions.trim()}`;
}

/** Layer 3: each selected skill's instructions whole, in the order typed. */
export function selectedSkillsLayer(skills: readonly SelectedSkill[]): string | null {
  if (skills.length === 0) return null;
  const parts = skills.map((s) => `## ${s.name} (/${s.slug})\n\n${s.instructions.trim()}`);
  return ['# Selected skills', 'The person selected these skills for this message.', ...parts].join('\n\n');
}

/** Layer 4: every other catalogue skill as `slug — one sentence`. */
export function catalogueLayer(catalogue: readonly CatalogueEntry[]): string | null {
  if (catalogue.length === 0) return null;
  return `# Skill catalogue\n\nLoad a skill with load_skill(slug) when it applies:\n${renderCatalogue(catalogue)}`;
}

/** Entries to chat messages once the attachment plan over all user messages is known. */
export function renderEntries(
  entries: readonly Entry[],
  attachments: AttachmentsById,
  model: PromptModel,
  limits: Limits,
): ChatMessage[] {
  const plans = planAttachments(userSegments(entries), attachments, limits, model.vision !== null);
  return entries.map((e): ChatMessage => {
    if (e.role === 'tool') return { role: 'tool', tool_call_id: e.callId, content: e.content };
    if (e.role === 'assistant') {
      return e.calls.length > 0
        ? { role: 'assistant', content: e.text === '' ? null : e.text, tool_calls: e.calls }
        : { role: 'assistant', content: e.text };
    }
    const parts = e.segments.flatMap((s) => segmentParts(s, plans.get(s)!, attachments, limits));
    return { role: 'user', content: joinParts(parts) };
  });
}

export function assemblePrompt(input: AssembleInput): AssembledPrompt {
  const { limits, model, attachments } = input;
  const counter = input.tokenCounter ?? sharedTokenCounter;
  const { httpTools, mcp } = input.agent;
  const tools = buildTools([...httpTools, ...(mcp?.tools ?? [])]);
  const system: Array<[LayerName, string | null]> = [
    ['portal_floor', portalFloorLayer(input.portalFloor, tools, mcp?.unavailable)],
    ['author', authorLayer(input.agent.instructions)],
    ['selected_skills', selectedSkillsLayer(input.selectedSkills)],
    ['catalogue', catalogueLayer(input.catalogue)],
  ];
  const entries = conversationEntries(input.window, input.newMessage, input.currentTurn, limits);
  const tagged: Array<[LayerName | EntryLayer, ChatMessage]> = [
    ...system.flatMap(([layer, content]): Array<[LayerName, ChatMessage]> =>
      content === null ? [] : [[layer, { role: 'system', content }]],
    ),
    ...renderEntries(entries, attachments, model, limits).map((m, i): [EntryLayer, ChatMessage] => [
      entries[i].layer,
      m,
    ]),
  ];

  const pictureSizes = new Map<string, { width: number; height: number }>();
  for (const a of Object.values(attachments))
    if (a.imageUrl && a.picture) pictureSizes.set(a.imageUrl, a.picture);
  const names: LayerName[] = [
    'portal_floor',
    'author',
    'selected_skills',
    'catalogue',
    'memory',
    'new_message',
  ];
  const layers = names.map((layer): LayerReport => ({ layer, tokens: 0, messages: [] }));
  layers[0].tokens = toolTokens(tools, counter) + FRAMING.replyPriming;
  for (const [layer, message] of tagged) {
    const report = layers[names.indexOf(layer)];
    report.tokens += messageTokens(message, { counter, pictureSizes });
    report.messages.push(message);
  }
  return {
    messages: tagged.map(([, m]) => m),
    tools,
    layers,
    totalTokens: layers.reduce((sum, l) => sum + l.tokens, 0),
  };
}

/** Whether the projected input reaches COMPACT_AT of the context window (SPEC section 5.1). */
export function isCompactionDue(totalTokens: number, contextWindow: number, limits: Limits): boolean {
  return totalTokens >= limits.COMPACT_AT * contextWindow;
}
