import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { countTokens } from 'gpt-tokenizer/cjs/encoding/o200k_base';
import type { ChatMessage, ChatTool } from './chat.types';
import {
  FRAMING,
  TokenCounter,
  UNKNOWN_PICTURE_TOKENS,
  messageTokens,
  pictureTokens,
  projectTokens,
  toolTokens,
} from './tokens';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('pictureTokens (OpenAI tile rule)', () => {
  it.each([
    [512, 512, 85 + 170 * 1],
    [1024, 1024, 85 + 170 * 4], // shortest side to 768: 768×768, 2×2 tiles
    [2048, 4096, 85 + 170 * 6], // fit 1024×2048, then 768×1536: 2×3 tiles
    [1024, 768, 85 + 170 * 4],
    [100, 3000, 85 + 170 * 4], // fit 68×2048: 1×4 tiles
  ])('%i×%i costs %i tokens', (w, h, tokens) => {
    expect(pictureTokens(w, h)).toBe(tokens);
  });

  it('assumes the most a picture can cost when its size is unknown', () => {
    expect(UNKNOWN_PICTURE_TOKENS).toBe(85 + 170 * 8);
  });
});

describe('TokenCounter', () => {
  it('counts with o200k_base, special tokens as plain text', () => {
    const counter = new TokenCounter();
    expect(counter.count('Hello, world')).toBe(countTokens('Hello, world'));
    expect(counter.count('a <|endoftext|> b')).toBeGreaterThan(3);
    expect(counter.count('')).toBe(0);
  });

  it('caches by content and drops the least recently used beyond its bound', () => {
    const counter = new TokenCounter(2);
    counter.count('one');
    counter.count('two');
    counter.count('one');
    counter.count('three');
    expect(counter.size).toBe(2);
    // "two" was the least recently used: counting it again encodes it (and evicts "one").
    counter.count('two');
    expect(counter.size).toBe(2);
  });

  it('encodes nothing again when the same text comes back', () => {
    const counter = new TokenCounter();
    const text = 'word '.repeat(20_000);
    counter.count(text);
    const start = process.hrtime.bigint();
    for (let i = 0; i < 100; i++) counter.count(text);
    expect(Number(process.hrtime.bigint() - start) / 1e6).toBeLessThan(50);
  });
});

describe('projectTokens', () => {
  const counter = new TokenCounter();
  const tool: ChatTool = {
    type: 'function',
    function: { name: 'f', description: 'Does f.', parameters: { type: 'object' } },
  };

  it('adds framing per message, tool calls, tool schemas and reply priming', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You help.' },
      { role: 'user', content: 'Hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'ok' },
    ];
    const expected =
      4 * FRAMING.perMessage +
      countTokens('You help.') +
      countTokens('Hi') +
      FRAMING.perToolCall +
      countTokens('f') +
      countTokens('{"a":1}') +
      countTokens('ok') +
      FRAMING.perTool +
      countTokens(JSON.stringify(tool.function)) +
      FRAMING.replyPriming;
    expect(projectTokens({ messages, tools: [tool] }, { counter })).toBe(expected);
    expect(toolTokens([tool], counter)).toBe(FRAMING.perTool + countTokens(JSON.stringify(tool.function)));
  });

  it('estimates pictures from their reduced size when known', () => {
    const message: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'Look' },
        { type: 'image_url', image_url: { url: 'data:a' } },
        { type: 'image_url', image_url: { url: 'data:b' } },
      ],
    };
    const sizes = new Map([['data:a', { width: 512, height: 512 }]]);
    expect(messageTokens(message, { counter, pictureSizes: sizes })).toBe(
      FRAMING.perMessage + countTokens('Look') + 255 + UNKNOWN_PICTURE_TOKENS,
    );
  });
});

describe('loadTokenizer', () => {
  it('is not loaded with the library, only at the first count', () => {
    // A process of its own (the library from source through tsx): this suite has loaded the tables.
    const script = `const { textTokens } = require('@portal/prompt');
      const loaded = () => Object.keys(require.cache).some((file) => file.includes('gpt-tokenizer'));
      const before = loaded();
      const tokens = textTokens('Xin chào');
      process.stdout.write(JSON.stringify({ before, after: loaded(), tokens }));`;
    const run = spawnSync(process.execPath, ['--conditions=portal-source', '--import', 'tsx', '-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ before: false, after: true, tokens: countTokens('Xin chào') });
  });
});
