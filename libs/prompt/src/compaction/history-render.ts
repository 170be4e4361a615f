import type { Block, ToolResultBlock } from '@portal/domain';
import type { Limits } from '../limits';
import { replayArguments } from '../memory';
import { cutText } from '../text-cut';
import { quoteBlock } from './quote.util';
import { type Stretch, isSteering, personText } from './summary-history';

/** The conversation as the summary prompt shows it, turn by turn. */

/** A result for the summary: its reference always shown, so a fact can carry it. */
function resultLine(result: ToolResultBlock, limits: Limits): string {
  const ref = result.ref ? ` (ref:${result.ref})` : '';
  const outcome = result.outcome === 'ok' ? '' : `[outcome: ${result.outcome}] `;
  const content = cutText(result.content, limits.RESULT_PREVIEW_CHARS);
  const cut = content.length < result.content.length ? ' … [cut]' : '';
  return `Result of ${result.callId}${ref}: ${outcome}${content}${cut}`;
}

function blockLine(block: Block, limits: Limits): string | null {
  switch (block.kind) {
    case 'text':
      return block.narration || block.text.trim() === '' ? null : `Agent: ${block.text}`;
    case 'tool_use':
      return `Agent called ${block.name} ${replayArguments(block.arguments, limits.ARG_STRING_CHARS)} (call ${block.callId})`;
    case 'tool_result':
      return resultLine(block, limits);
    case 'clarification_request':
      return `Agent asked the person: ${block.question}${block.answer === null ? ' (no answer)' : `\nPerson answered: ${block.answer}`}`;
    case 'approval_request': {
      const verdict = block.approved === null ? 'pending' : block.approved ? 'approved' : 'denied';
      return `Agent asked approval to call ${block.name}: ${verdict}${block.note ? ` (${block.note})` : ''}`;
    }
    default:
      return null; // thinking never enters; a compaction cannot follow the cut
  }
}

export function renderStretch(s: Stretch, limits: Limits): string {
  const lines = [`### Turn ${s.turnN}${s.current ? ' (the current turn, so far)' : ''}`];
  for (const m of s.messages) {
    if (m.role === 'user') {
      const text = personText(m);
      const attached = m.attachmentIds.length > 0 ? ` [attachments: ${m.attachmentIds.join(', ')}]` : '';
      if (text !== '' || attached !== '')
        lines.push(`Person${isSteering(m) ? ' (while the turn ran)' : ''}: ${text}${attached}`);
      continue;
    }
    for (const b of m.blocks) {
      const line = blockLine(b, limits);
      if (line !== null) lines.push(line);
    }
  }
  return lines.join('\n');
}

/** A request as "Requests to keep" lists it. */
export function requestEntry(turnN: number, quoted: string): string {
  return `${turnLine(turnN)}${quoteBlock(quoted)}`;
}

function turnLine(turnN: number): string {
  return `Turn ${turnN}:\n`;
}

/**
 * The tokens of `turnLine(turnN)` without encoding it: o200k splits it into `Turn`, ` `, the digits
 * in groups of up to three and `:\n`, each one token (checked against the encoder in the tests). A
 * first compaction of a long conversation measures thousands of them.
 */
export function turnLineTokens(turnN: number): number {
  return 3 + Math.ceil(String(turnN).length / 3);
}
