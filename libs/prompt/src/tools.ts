import type { ChatTool, JsonSchema } from './chat.types';

/** SPEC section 3: the built-in tools every call offers, then the agent's HTTP tools. */
export const BUILTIN_TOOL_NAMES = [
  'load_skill',
  'read_document',
  'search_attachments',
  'read_tool_result',
  'ask_clarification',
] as const;
export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

export interface HttpToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

const object = (properties: Record<string, JsonSchema>, required: string[]): JsonSchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

const tool = (name: BuiltinToolName, description: string, parameters: JsonSchema): ChatTool => ({
  type: 'function',
  function: { name, description, parameters },
});

export const BUILTIN_TOOLS: readonly ChatTool[] = [
  tool(
    'load_skill',
    'Load the instructions of a skill from the skill catalogue.',
    object({ slug: { type: 'string', description: 'The skill slug, without the leading slash.' } }, ['slug']),
  ),
  tool(
    'read_document',
    'Read the text of a document attachment, one page at a time.',
    object(
      {
        attachment_id: { type: 'string', description: 'The attachment id from its manifest.' },
        page: {
          type: 'integer',
          minimum: 1,
          description: 'The page to read; pages count from 1. Default 1.',
        },
        offset: {
          type: 'integer',
          minimum: 0,
          description: 'Character offset within the page to continue from. Default 0.',
        },
      },
      ['attachment_id'],
    ),
  ),
  tool(
    'search_attachments',
    "Search the text of the conversation's document attachments.",
    object(
      {
        query: { type: 'string', description: 'What to look for.' },
        attachment_ids: {
          type: 'array',
          items: { type: 'string' },
          description: 'Only search these attachments. Default: all documents of the conversation.',
        },
      },
      ['query'],
    ),
  ),
  tool(
    'read_tool_result',
    'Fetch the whole result of an earlier tool call by its reference.',
    object({ ref: { type: 'string', description: 'The reference, with or without its "ref:" prefix.' } }, [
      'ref',
    ]),
  ),
  tool(
    'ask_clarification',
    'Ask the person a question and wait for the answer. Use only when you cannot go on without it.',
    object(
      {
        question: { type: 'string' },
        options: { type: 'array', items: { type: 'string' }, description: 'Answers the person can pick.' },
      },
      ['question'],
    ),
  ),
];

/** The tools of a call: the built-in ones, then the agent's. A clash of names throws. */
export function buildTools(httpTools: readonly HttpToolSpec[]): ChatTool[] {
  const names = new Set<string>(BUILTIN_TOOL_NAMES);
  const own = httpTools.map((t): ChatTool => {
    if (names.has(t.name)) throw new Error(`Tool name "${t.name}" is used twice`);
    names.add(t.name);
    return {
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    };
  });
  return [...BUILTIN_TOOLS, ...own];
}

/** What providers accept as a function name (OpenAI's rule; the strictest of the common ones). */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The name the model calls an MCP server's tool by: `<server>__<tool>`, other characters than
 * letters, digits, `_` and `-` as `_`, cut to 64 characters, and made unique among `taken` with a
 * numbered suffix (the turn keeps which tool each name stands for).
 */
export function mcpToolName(server: string, tool: string, taken: ReadonlySet<string>): string {
  const base = `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base.slice(0, 64 - `_${i}`.length)}_${i}`;
  return name;
}

/** The `read_tool_result` argument as stored: `ref:tr_8f2c` and `tr_8f2c` both give `tr_8f2c`. */
export function toolResultRef(ref: string): string {
  return ref.trim().replace(/^ref:\s*/, '');
}
