import type { CompactionPrompt, QuotedRequest } from './compaction.types';
import { leftOutRequests } from './summary-requests';

/** The checks on the model's answer that make it a summary (SPEC 5.2). */

function normalise(text: string): string {
  // Every run of white space as one space; a lone space, the most of them, is left as it is.
  return text.replace(/\s{2,}|[^\S ]/g, ' ').trim();
}

function requestBullet(r: QuotedRequest): string {
  return `- Turn ${r.turnN}: ${r.quoted.replace(/\n/g, '\n  ')}`;
}

const HEADING_LINE = /^#{1,6}\s+\S/;
const REQUESTS_HEADING = /^#{1,6}\s*Requests\s*:?\s*$/i;

/** `lines` with `bullets` added at the end of the Requests section (made after the first line when missing). */
function addToRequests(lines: string[], bullets: string[]): string[] {
  const at = lines.findIndex((l) => REQUESTS_HEADING.test(l.trim()));
  if (at < 0) return [lines[0], '', '## Requests', ...bullets, '', ...lines.slice(1)];
  let end = lines.findIndex((l, i) => i > at && HEADING_LINE.test(l.trim()));
  if (end < 0) end = lines.length;
  let insert = end;
  while (insert > at + 1 && lines[insert - 1].trim() === '') insert -= 1;
  return [...lines.slice(0, insert), ...bullets, ...lines.slice(insert)];
}

/**
 * The model's answer made a summary: it opens with `Summary of turns 1–N` (the line is corrected
 * or added), and every request the prompt lists appears verbatim (compared with runs of whitespace
 * as one space), as does the line standing for those not quoted; a missing one is restored at the
 * end of the Requests section, which is added when the answer has none.
 */
export function finishSummary(
  answer: string,
  prompt: Pick<CompactionPrompt, 'heading' | 'requests'> & Partial<Pick<CompactionPrompt, 'requestsLeftOut'>>,
): { summary: string; restored: QuotedRequest[] } {
  let lines = answer.trim().split('\n');
  const first = /^\s*#*\s*\**Summary of turns\s+\d+\s*[–-]\s*\d+\**/i;
  if (first.test(lines[0] ?? '')) lines[0] = lines[0].replace(first, prompt.heading);
  else lines = [prompt.heading, '', ...lines];
  const present = normalise(lines.join('\n'));
  // A summary lists the requests in their order most often: each is looked for after the last one
  // found, and in the whole summary only when it is not there, so checking thousands stays linear.
  let after = 0;
  const restored = prompt.requests.filter((r) => {
    const quoted = normalise(r.quoted);
    const at = present.indexOf(quoted, after);
    if (at >= 0) after = at + quoted.length;
    return at < 0 && !present.includes(quoted);
  });
  const range = prompt.requestsLeftOut;
  const bullets = [
    ...(range && !present.includes(normalise(leftOutRequests(range)))
      ? [`- Turns ${range.from}–${range.to}: ${leftOutRequests(range)}`]
      : []),
    ...restored.map(requestBullet),
  ];
  if (bullets.length > 0) lines = addToRequests(lines, bullets);
  return { summary: lines.join('\n').trim(), restored };
}

/** The summary as people see it: the model reads the `ref:` references, the screen does not. */
export function summaryForPeople(summary: string): string {
  return summary
    .replace(/[ \t]*[([]ref:[A-Za-z0-9_-]+[)\]]/g, '')
    .replace(/[ \t]*\bref:[A-Za-z0-9_-]+/g, '')
    .replace(/[ \t]+$/gm, '');
}
