import type { ChatMessage, ChatRequest, ChatTool } from './chat.types';

/**
 * Token projection (SPEC section 5.1): o200k_base counts plus the provider's framing. The framing
 * numbers are estimates of the Chat Completions wire format, not spec limits.
 */
export const FRAMING = {
  /** `<|start|>role<|message|>…<|end|>` around every message. */
  perMessage: 3,
  /** Name, id and wrapper of one tool call in an assistant message. */
  perToolCall: 4,
  /** The assistant reply the provider primes. */
  replyPriming: 3,
  /** Wrapper of one function definition. */
  perTool: 8,
} as const;

/** OpenAI's tile rule for a picture sent at high detail. */
export const PICTURE_TILES = {
  fitSide: 2048,
  shortSide: 768,
  tile: 512,
  baseTokens: 85,
  tileTokens: 170,
} as const;

/** Special tokens typed by a person are counted as plain text, as the provider encodes them. */
const PLAIN = { disallowedSpecial: new Set<string>() };

type Encoding = typeof import('gpt-tokenizer/cjs/encoding/o200k_base');
let encoding: Encoding | undefined;

/**
 * Loads the o200k_base tables (megabytes of heap, a noticeable pause) at the first count, so a process that
 * never counts (attachment-ingest) does not carry them; a service that counts on every turn calls
 * it at boot instead. The `cjs/` path, because the workspace resolves modules the node10 way,
 * which ignores package exports.
 */
export function loadTokenizer(): Encoding {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  encoding ??= require('gpt-tokenizer/cjs/encoding/o200k_base') as Encoding;
  return encoding;
}

/** The o200k_base tokens of `text`, uncached (see TokenCounter for texts counted again). */
export function textTokens(text: string): number {
  return loadTokenizer().countTokens(text, PLAIN);
}

/**
 * Counts tokens with a bounded LRU cache keyed by the text itself: memory is rebuilt on every call
 * from the same strings, so re-projecting a grown conversation only encodes what is new.
 */
export class TokenCounter {
  private readonly cache = new Map<string, number>();

  constructor(private readonly maxEntries = 20_000) {}

  count(text: string): number {
    if (text === '') return 0;
    const hit = this.cache.get(text);
    if (hit !== undefined) {
      this.cache.delete(text);
      this.cache.set(text, hit);
      return hit;
    }
    const tokens = textTokens(text);
    this.cache.set(text, tokens);
    if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value as string);
    return tokens;
  }

  get size(): number {
    return this.cache.size;
  }
}

/** The counter shared by callers that bring none (one per process is the point of the cache). */
export const sharedTokenCounter = new TokenCounter();

/** Tokens of one picture of the given (reduced) size, by OpenAI's high-detail tile rule. */
export function pictureTokens(width: number, height: number): number {
  const { fitSide, shortSide, tile, baseTokens, tileTokens } = PICTURE_TILES;
  let w = width;
  let h = height;
  const fit = Math.min(1, fitSide / Math.max(w, h));
  w *= fit;
  h *= fit;
  const shrink = Math.min(1, shortSide / Math.min(w, h));
  w *= shrink;
  h *= shrink;
  return baseTokens + tileTokens * Math.ceil(w / tile) * Math.ceil(h / tile);
}

/** When a picture's size is unknown: the most a picture can cost after the tile rule's scaling. */
export const UNKNOWN_PICTURE_TOKENS = pictureTokens(PICTURE_TILES.fitSide, PICTURE_TILES.shortSide);

export interface ProjectionOptions {
  counter?: TokenCounter;
  /** Reduced sizes of the pictures in the request, by image URL. */
  pictureSizes?: ReadonlyMap<string, { width: number; height: number }>;
}

export function messageTokens(message: ChatMessage, options: ProjectionOptions = {}): number {
  const counter = options.counter ?? sharedTokenCounter;
  let tokens = FRAMING.perMessage;
  if (typeof message.content === 'string') {
    tokens += counter.count(message.content);
  } else if (Array.isArray(message.content)) {
    for (const part of message.content) {
      if (part.type === 'text') {
        tokens += counter.count(part.text);
      } else {
        const size = options.pictureSizes?.get(part.image_url.url);
        tokens += size ? pictureTokens(size.width, size.height) : UNKNOWN_PICTURE_TOKENS;
      }
    }
  }
  if (message.role === 'assistant') {
    for (const call of message.tool_calls ?? []) {
      tokens +=
        FRAMING.perToolCall + counter.count(call.function.name) + counter.count(call.function.arguments);
    }
  }
  return tokens;
}

export function toolTokens(tools: readonly ChatTool[], counter: TokenCounter = sharedTokenCounter): number {
  return tools.reduce((sum, t) => sum + FRAMING.perTool + counter.count(JSON.stringify(t.function)), 0);
}

/** Projected input tokens of a request: every message, the tool schemas, pictures and framing. */
export function projectTokens(request: ChatRequest, options: ProjectionOptions = {}): number {
  const messages = request.messages.reduce((sum, m) => sum + messageTokens(m, options), 0);
  return messages + toolTokens(request.tools, options.counter) + FRAMING.replyPriming;
}
