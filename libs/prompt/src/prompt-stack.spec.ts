import { type MemoryWindow, TurnId } from '@portal/domain';
import type { ChatSystemMessage } from './chat.types';
import {
  assemblePrompt,
  authorLayer,
  catalogueLayer,
  isCompactionDue,
  portalFloorLayer,
  selectedSkillsLayer,
  type AssembleInput,
} from './prompt-stack';
import { TokenCounter, projectTokens } from './tokens';
import { BUILTIN_TOOL_NAMES, buildTools } from './tools';
import {
  chat,
  documentAttachment,
  limits,
  messages,
  pictureAttachment,
  assistant,
  use,
  result,
} from './testing/transcript.fixtures';

const window: MemoryWindow = { summary: null, turns: [chat(1, 'Hello', 'Hi, how can I help?')] };
const photo = pictureAttachment('att_p');
const note = documentAttachment('att_d', {
  filename: 'note.md',
  mimeType: 'text/markdown',
  text: '# Note\nShort.',
  chars: 13,
});

const input = (over: Partial<AssembleInput> = {}): AssembleInput => ({
  portalFloor: 'You are the Acme assistant. Be brief.',
  agent: {
    instructions: 'Answer questions about Acme sales.',
    httpTools: [
      {
        name: 'crm_lookup',
        description: 'Look up a customer.',
        parameters: { type: 'object', properties: {} },
      },
    ],
  },
  selectedSkills: [
    { slug: 'fact-check', name: 'Fact check', instructions: 'Check every figure.' },
    { slug: 'market-research', name: 'Market research', instructions: 'Compare with competitors.' },
  ],
  catalogue: [{ slug: 'summarise', description: 'Summarise long documents.' }],
  window,
  newMessage: { text: '/fact-check /market-research How did Q3 go?', attachmentIds: ['att_p', 'att_d'] },
  currentTurn: [],
  attachments: { att_p: photo, att_d: note },
  model: { contextWindow: 128_000, vision: { maxLongSide: 2048, maxShortSide: 768 }, reasoning: false },
  limits,
  tokenCounter: new TokenCounter(),
  ...over,
});

describe('assemblePrompt', () => {
  it('stacks layers 1–4 as one system message each, in order, with headings', () => {
    const prompt = assemblePrompt(input());
    const system = prompt.messages.filter((m): m is ChatSystemMessage => m.role === 'system');
    expect(system.map((m) => m.content.split('\n')[0])).toEqual([
      '# Portal floor',
      '# Author instructions',
      '# Selected skills',
      '# Skill catalogue',
    ]);
    expect(system[1].content).toBe('# Author instructions\n\nAnswer questions about Acme sales.');
    expect(system[2].content).toBe(
      '# Selected skills\n\nThe person selected these skills for this message.\n\n## Fact check (/fact-check)\n\nCheck every figure.\n\n## Market research (/market-research)\n\nCompare with competitors.',
    );
    expect(system[3].content).toBe(
      '# Skill catalogue\n\nLoad a skill with load_skill(slug) when it applies:\nsummarise — Summarise long documents.',
    );
  });

  it('leaves empty layers out', () => {
    const prompt = assemblePrompt(
      input({ agent: { instructions: '  ', httpTools: [] }, selectedSkills: [], catalogue: [] }),
    );
    expect(prompt.messages.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(prompt.layers.map((l) => l.messages.length)).toEqual([1, 0, 0, 0, 2, 1]);
    expect(authorLayer('')).toBeNull();
    expect(selectedSkillsLayer([])).toBeNull();
    expect(catalogueLayer([])).toBeNull();
  });

  it('states the runtime contract in layer 1', () => {
    const floor = portalFloorLayer(
      'You are the Acme assistant.',
      buildTools([{ name: 'crm_lookup', description: '', parameters: {} }]),
    );
    expect(floor.startsWith('# Portal floor\n\nYou are the Acme assistant.\n\n## Runtime contract')).toBe(
      true,
    );
    for (const name of [...BUILTIN_TOOL_NAMES, 'crm_lookup']) expect(floor).toContain(name);
    expect(floor).toContain('ref:<id>');
    expect(floor).toContain('manifest');
    expect(floor).toContain('Only text you write without calling a tool is your answer');
    expect(floor).toContain('portal floor, author instructions, selected skills, skill catalogue');
    expect(floor).toContain('the later layer wins');
  });

  it('offers the built-in tools, then the agent HTTP tools', () => {
    expect(assemblePrompt(input()).tools.map((t) => t.function.name)).toEqual([
      ...BUILTIN_TOOL_NAMES,
      'crm_lookup',
    ]);
  });

  it('sends memory, then the new message without its leading slugs and with its attachments', () => {
    const prompt = assemblePrompt(input());
    expect(prompt.messages.slice(4)).toEqual([
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'Hi, how can I help?' },
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: 'How did Q3 go?\n\n[Attachment att_p: att_p.jpg (image/jpeg, picture)] — picture attached, reduced to 1024×768 (original 4032×3024)',
          },
          { type: 'image_url', image_url: { url: 'data:image/jpeg;base64,att_p' } },
          {
            type: 'text',
            text: '[Attachment att_d: note.md (text/markdown, document)]\nReading progress: 2/2 pages read (finished)\nWhole text:\n"""\n# Note\nShort.\n"""',
          },
        ],
      },
    ]);
  });

  it('follows the new message with the turn so far', () => {
    const currentTurn = messages(TurnId('t2'), [
      assistant(use('c1', 'crm_lookup', '{"id":"42"}'), result('c1', 'Acme Corp')),
    ]);
    const prompt = assemblePrompt(input({ currentTurn }));
    expect(prompt.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'crm_lookup', arguments: '{"id":"42"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'Acme Corp' },
    ]);
    expect(prompt.layers[5].messages.length).toBe(3);
  });

  it('reports tokens per layer that add up to the projection of the whole request', () => {
    const counter = new TokenCounter();
    const prompt = assemblePrompt(input({ tokenCounter: counter }));
    expect(prompt.layers.map((l) => [l.layer, l.messages.length])).toEqual([
      ['portal_floor', 1],
      ['author', 1],
      ['selected_skills', 1],
      ['catalogue', 1],
      ['memory', 2],
      ['new_message', 1],
    ]);
    expect(prompt.layers.every((l) => l.tokens > 0)).toBe(true);
    expect(prompt.totalTokens).toBe(prompt.layers.reduce((s, l) => s + l.tokens, 0));
    const sizes = new Map([[photo.imageUrl!, { width: 1024, height: 768 }]]);
    expect(prompt.totalTokens).toBe(projectTokens(prompt, { counter, pictureSizes: sizes }));
  });

  it('tells when the projected input reaches COMPACT_AT of the context window', () => {
    expect(isCompactionDue(849, 1000, limits)).toBe(false);
    expect(isCompactionDue(850, 1000, limits)).toBe(true);
  });
});
