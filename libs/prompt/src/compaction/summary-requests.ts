import type { Limits } from '../limits';
import { cutText } from '../text-cut';
import { sharedTokenCounter, type TokenCounter } from '../tokens';
import type { CompactionPromptInput, PersonRequest, QuotedRequest, TurnRange } from './compaction.types';
import { type History, history } from './summary-history';
import { requestEntry, turnLineTokens } from './history-render';

/** The requests a summary must keep, quoted within their share of the prompt (SPEC 5.2). */

function requestRef(r: Pick<QuotedRequest, 'turnN' | 'messageId'>): string {
  return `[shortened; whole request: turn ${r.turnN}, message ${r.messageId}]`;
}

/**
 * The requests from turn 1 that fit SUMMARY_REQUESTS_SHARE of the context window (in
 * tokens), oldest first. Newest first, requests are kept whole while they fit; from the first one
 * that does not, every older one is shortened with a reference to its message (to the reference
 * alone when even the shortened form does not fit); from the first whose reference does not fit,
 * it and every older one are left out (the prompt names their turns in one line), so the section
 * stays within its share however long the conversation.
 */
export function quoteRequests(
  requests: readonly PersonRequest[],
  contextWindow: number,
  limits: Limits,
  counter: TokenCounter = sharedTokenCounter,
): QuotedRequest[] {
  return quote(requests, requestsShare(contextWindow, limits), limits, counter).requests;
}

/** quoteRequests within `share` tokens, with the tokens of the share left. */
function quote(
  requests: readonly PersonRequest[],
  share: number,
  limits: Limits,
  counter: TokenCounter,
): { requests: QuotedRequest[]; shareLeft: number } {
  let left = share;
  let shortening = false;
  const out: QuotedRequest[] = [];
  // Each request is measured as its entry in the prompt, which is what the section is made of.
  const cost = (r: PersonRequest, quoted: string) => counter.count(requestEntry(r.turnN, quoted));
  for (let i = requests.length - 1; i >= 0; i--) {
    const r = requests[i];
    const whole = r.tokens === undefined ? cost(r, r.text) : turnLineTokens(r.turnN) + r.tokens;
    if (!shortening && whole <= left) {
      left -= whole;
      out.push({ turnN: r.turnN, messageId: r.messageId, text: r.text, quoted: r.text, shortened: false });
      continue;
    }
    shortening = true;
    const start = cutText(r.text, limits.SHORTENED_REQUEST_CHARS).trim();
    const short = `${start} … ${requestRef(r)}`;
    const quoted = cost(r, short) <= left ? short : requestRef(r);
    const tokens = cost(r, quoted);
    if (tokens > left) break;
    left -= tokens;
    out.push({ turnN: r.turnN, messageId: r.messageId, text: r.text, quoted, shortened: true });
  }
  return { requests: out.reverse(), shareLeft: left };
}

/** The tokens the requests section may take (SPEC 5.2). */
export function requestsShare(contextWindow: number, limits: Limits): number {
  return Math.floor(limits.SUMMARY_REQUESTS_SHARE * contextWindow);
}

/** What stands in the summary for the oldest requests, past the requests share even as references. */
export function leftOutRequests(range: TurnRange): string {
  return `[the requests of turns ${range.from}–${range.to} are not quoted: past the requests share; each is in the transcript]`;
}

export function requestsOf(
  h: History,
  input: CompactionPromptInput,
  counter: TokenCounter,
): { requests: QuotedRequest[]; leftOut: TurnRange | null; shareLeft: number } {
  const asked = h.people.filter((r) => r.text !== '');
  const share = requestsShare(input.contextWindow, input.limits);
  const { requests, shareLeft } = quote(asked, share, input.limits, counter);
  const newestLeftOut = asked.at(-requests.length - 1);
  return {
    requests,
    leftOut: newestLeftOut ? { from: 1, to: newestLeftOut.turnN } : null,
    shareLeft,
  };
}

/**
 * The requests the summary of `input` keeps, the turns of those left out, and the tokens of the
 * requests share they take and leave: what the worker checks while it reads the person's messages
 * backwards, without building the whole prompt.
 */
export function summaryRequests(input: CompactionPromptInput): {
  requests: QuotedRequest[];
  leftOut: TurnRange | null;
  tokens: number;
  shareLeft: number;
} {
  const asked = requestsOf(history(input), input, input.counter ?? sharedTokenCounter);
  return { ...asked, tokens: requestsShare(input.contextWindow, input.limits) - asked.shareLeft };
}
