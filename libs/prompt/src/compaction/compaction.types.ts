import type { CompactionBlock, CompactionTrigger, MemoryWindow, Message } from '@portal/domain';
import type { ChatRequest } from '../chat.types';
import type { Limits } from '../limits';
import type { TokenCounter } from '../tokens';

/** SPEC section 5.2: the shapes the summary prompt is built from and made of. */

/** The summary's sections, in order, with their English headings. */
export const SUMMARY_SECTIONS = ['Requests', 'Decisions', 'Work done', 'Open work', 'Facts'] as const;

export interface TurnRange {
  from: number;
  to: number;
}

export interface CompactionPromptInput {
  /**
   * The newest summary before the current turn and the settled turns after it, oldest first: every
   * one, or the newest ones read backwards until `turnsLeftOut` says some of them did not fit.
   */
  window: MemoryWindow;
  /**
   * The person's requests in the settled turns from turn 1, oldest first: every one, or the newest
   * ones read backwards until `requestsLeftOut` says some did not fit (how the worker reads them
   * stored). The summary keeps them all within their share; an earlier summary's own requests are
   * superseded by them. Default: the requests in the turns shown (`window.turns`).
   */
  people?: readonly PersonRequest[];
  /** The turn the compaction happens in: the running turn so far (AUTO) or the `/compact` turn (MANUAL). */
  current: { n: number; messages: readonly Message[] };
  trigger: CompactionTrigger;
  /** The agent's `compactionGuidance`. */
  guidance?: string | null;
  /** Of the turn's model. */
  contextWindow: number;
  limits: Limits;
  counter?: TokenCounter;
}

/** A message of the person as a request the summary keeps (see `personRequest`). */
export interface PersonRequest {
  turnN: number;
  messageId: string;
  /** The text as the model read it (leading `/slug` tokens removed); '' when it asks nothing. */
  text: string;
  /** `personRequest`'s count of the text as quoted, when it was stored with it; else counted here. */
  tokens?: number;
}

/** A request of the person as the summary must keep it. */
export interface QuotedRequest {
  turnN: number;
  messageId: string;
  /** The text as the model read it (leading `/slug` tokens removed). */
  text: string;
  /** What the summary must contain: the text, or past the requests share, its start and a reference. */
  quoted: string;
  shortened: boolean;
}

export interface CompactionPrompt extends ChatRequest {
  coversTurns: { from: 1; to: number };
  /** `Summary of turns 1–N`. */
  heading: string;
  /** Every request from turn 1 that fits the requests share, oldest first. */
  requests: QuotedRequest[];
  /** The turns of the oldest requests, past the requests share even as references; or null. */
  requestsLeftOut: TurnRange | null;
  /** The oldest turns since the earlier summary, past the prompt's budget: only their requests are kept; or null. */
  turnsLeftOut: TurnRange | null;
  /** The paragraphs quoted to pick the summary's language, oldest first. */
  languageSample: string[];
  /** The summary the history opens with, carried whole into the new one. */
  earlierSummary: CompactionBlock | null;
  /** What follows `/compact`, when the person gave instructions. */
  instructions: string | null;
}
