import type { Block, BlockOf } from '@portal/domain';
import { parseLeadingSlugs, summaryForPeople } from '@portal/prompt';
import type { Api } from './api';
import { h, uid } from './dom';
import { t } from './i18n';

/**
 * How each finished block is drawn (SPEC 9). Text is plain text (white-space kept, no markup);
 * what the person sees of a tool is one line.
 */

/** A user's text: a typed `/compact` becomes the "Compact" pill; leading `/slug`s become chips. */
export function userText(el: HTMLElement, text: string): void {
  const parsed = parseLeadingSlugs(text);
  if (parsed.isCompact) {
    el.replaceChildren(
      h(
        'span',
        { class: 'pill' },
        h('span', { class: 'pill-label' }, t('block.compactPill')),
        parsed.compactInstructions ? h('span', { class: 'pill-text' }, parsed.compactInstructions) : null,
      ),
    );
    return;
  }
  el.replaceChildren();
  if (parsed.slugs.length > 0) {
    // The message keeps the text as typed: the chips hold the tokens themselves.
    const head = text.slice(0, text.length - parsed.rest.length);
    for (const part of head.split(/(\s+)/)) {
      if (!part) continue;
      el.append(/^\/\S+$/.test(part) ? h('span', { class: 'chip' }, part) : part);
    }
    el.append(parsed.rest);
  } else {
    el.append(text);
  }
}

export function thinking(el: HTMLElement, text: string, live: boolean): void {
  const gist = text.replace(/\s+/g, ' ').trim();
  el.replaceChildren(
    h('span', { class: 'thinking-label' }, live ? t('turn.thinking') : t('turn.thought')),
    // One line, never opened: the tail while it streams, the opening once it is done.
    h(
      'span',
      { class: live ? 'thinking-gist tail' : 'thinking-gist' },
      live ? gist.slice(-160) : gist.slice(0, 240),
    ),
  );
}

/** Arguments as pretty JSON (as they came when they are not JSON): every character of them. */
export function prettyArguments(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/**
 * Every argument, in full: nothing is cut, a long value wraps and the box scrolls (SPEC 9: nothing
 * may be approved unseen). Focusable, so the keyboard can scroll it too.
 */
function argumentsBox(name: string, args: string): HTMLElement {
  return h(
    'pre',
    { class: 'tool-args', tabindex: 0, 'aria-label': t('block.arguments', { name }) },
    prettyArguments(args),
  );
}

function argumentsPreview(args: string): string {
  const flat = args.replace(/\s+/g, ' ').trim();
  return flat.length > 120 ? `${flat.slice(0, 119)}…` : flat;
}

/** A call: its name and arguments on one line, opening to the arguments in full. */
export function toolUse(el: HTMLElement, block: BlockOf<'tool_use'>): void {
  el.replaceChildren(
    h(
      'details',
      {},
      h(
        'summary',
        {},
        h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
        h('span', { class: 'tool-name' }, block.name),
        ' ',
        h('code', { class: 'tool-args-line' }, argumentsPreview(block.arguments)),
      ),
      argumentsBox(block.name, block.arguments),
    ),
  );
}

export function toolResult(el: HTMLElement, block: BlockOf<'tool_result'>): void {
  el.dataset.outcome = block.outcome;
  const preview = block.content.length > 4000 ? `${block.content.slice(0, 4000)}…` : block.content;
  el.replaceChildren(
    h(
      'details',
      {},
      h('summary', {}, h('span', { class: 'outcome' }, block.outcome), ' ', firstLine(block.content)),
      h('pre', { class: 'tool-output' }, preview),
    ),
  );
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

/** The compaction divider: a separator named "Context summarised" that opens to the summary. */
export function compaction(el: HTMLElement, block: BlockOf<'compaction'>): void {
  el.dataset.trigger = block.trigger;
  const auto = block.trigger === 'AUTO';
  el.replaceChildren(
    h(
      'details',
      { class: 'compaction' },
      h(
        'summary',
        { title: t('block.showSummary', { from: block.coversTurns.from, to: block.coversTurns.to }) },
        h(
          'span',
          { class: 'divider', role: 'separator', 'aria-label': t('block.compaction') },
          h('span', { class: 'rule' }),
          h('span', { class: 'divider-label' }, t('block.compaction')),
          auto ? h('span', { class: 'auto-mark' }, t('block.automatic')) : null,
          h('span', { class: 'rule' }),
        ),
      ),
      h('div', { class: 'summary-text' }, summaryForPeople(block.summary)),
    ),
  );
}

export interface RequestContext {
  api: Api;
  turnId: string;
}

export function request(el: HTMLElement, block: Block, ctx: RequestContext): void {
  if (block.kind === 'clarification_request') clarification(el, block, ctx);
  else if (block.kind === 'approval_request') approval(el, block, ctx);
}

function clarification(el: HTMLElement, block: BlockOf<'clarification_request'>, ctx: RequestContext): void {
  const question = h('p', { class: 'request-question' }, block.question);
  if (block.answer !== null) {
    el.replaceChildren(question, h('p', { class: 'request-answer' }, t('request.answered'), block.answer));
    return;
  }
  const error = h('p', { class: 'request-error', role: 'alert' });
  const fieldId = uid('answer');
  const field = h('input', { id: fieldId, type: 'text', class: 'request-field', autocomplete: 'off' });
  const send = async (answer: string) => {
    if (!answer.trim()) return;
    form.inert = true;
    error.textContent = '';
    try {
      await ctx.api.answer(ctx.turnId, block.id, { answer });
    } catch (err) {
      error.textContent = (err as Error).message;
      form.inert = false;
    }
  };
  const form = h(
    'form',
    { class: 'request-form', 'aria-label': t('request.answerForm') },
    block.options.length > 0
      ? h(
          'div',
          { class: 'request-options', role: 'group', 'aria-label': t('request.options') },
          ...block.options.map((option) =>
            h('button', { type: 'button', class: 'option', onclick: () => void send(option) }, option),
          ),
        )
      : null,
    h(
      'div',
      { class: 'request-row' },
      h('label', { for: fieldId }, t('request.answer')),
      field,
      h('button', { type: 'submit' }, t('request.reply')),
    ),
    error,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void send(field.value);
  });
  el.replaceChildren(question, form);
}

function approval(el: HTMLElement, block: BlockOf<'approval_request'>, ctx: RequestContext): void {
  const [before, after] = t('request.run', { name: '\u0000' }).split('\u0000');
  const head = h(
    'div',
    { class: 'request-head' },
    h('p', { class: 'request-question' }, before, h('span', { class: 'tool-name' }, block.name), after),
    argumentsBox(block.name, block.arguments),
  );
  if (block.approved !== null) {
    el.replaceChildren(
      head,
      h(
        'p',
        { class: 'request-answer', 'data-approved': String(block.approved) },
        block.approved ? t('request.approved') : t('request.denied'),
        block.note ? ` — ${block.note}` : '',
      ),
    );
    return;
  }
  const error = h('p', { class: 'request-error', role: 'alert' });
  const noteId = uid('note');
  const note = h('input', { id: noteId, type: 'text', class: 'request-field', autocomplete: 'off' });
  const decide = async (approved: boolean) => {
    form.inert = true;
    error.textContent = '';
    try {
      const text = note.value.trim();
      await ctx.api.answer(ctx.turnId, block.id, text ? { approved, note: text } : { approved });
    } catch (err) {
      error.textContent = (err as Error).message;
      form.inert = false;
    }
  };
  const form = h(
    'form',
    { class: 'request-form', 'aria-label': t('request.approval') },
    h('div', { class: 'request-row' }, h('label', { for: noteId }, t('request.note')), note),
    h(
      'div',
      { class: 'request-options' },
      h(
        'button',
        { type: 'button', class: 'approve', onclick: () => void decide(true) },
        t('request.approve'),
      ),
      h('button', { type: 'button', class: 'deny', onclick: () => void decide(false) }, t('request.deny')),
    ),
    error,
  );
  form.addEventListener('submit', (e) => e.preventDefault());
  el.replaceChildren(head, form);
}
