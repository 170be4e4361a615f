import type { BlockOf } from '@portal/domain';
import { SCREEN_LIMITS } from '@portal/prompt';
import type { Api, AttachmentManifest } from './api';
import { attachmentPreview } from './attachments';
import * as draw from './blocks';
import { h } from './dom';
import { describeFailure } from './failure';
import { formatNumber, t } from './i18n';
import { LiveText } from './live-text';
import { copyText } from './clipboard';
import { formattedReplies, onFormattedReplies } from './settings';
import {
  isOpen,
  type BlockModel,
  type Change,
  type MessageModel,
  type Transcript,
  type TurnModel,
} from './transcript';

export interface ViewHooks {
  api: Api;
  /** Says a settled answer in the live region. */
  announce(text: string): void;
  /** A turn's status changed (the composer shows Cancel, refuses what it must). */
  onTurn(turn: TurnModel, settled: boolean): void;
  /** A turn's usage rows changed (the context meter follows the newest call). */
  onUsage(turn: TurnModel): void;
}

/**
 * Draws a transcript and keeps it in step with its changes. Elements are kept by message key and
 * block id, so an update moves what exists and never redraws a block that streams.
 */
export class ConversationView {
  readonly el = h('div', { class: 'transcript' });
  private readonly articles = new Map<string, HTMLElement>();
  private readonly blockEls = new Map<string, HTMLElement>();
  private readonly live = new Map<string, LiveText>();
  private readonly notes = new Map<string, HTMLElement>();
  private readonly efforts = new Map<string, HTMLElement>();
  private readonly usages = new Map<string, HTMLElement>();
  private readonly announced = new Set<string>();
  private readonly thinkingIndicator = h(
    'div',
    { class: 'indicator thinking-indicator', role: 'status' },
    h('span', { class: 'shimmer' }, t('turn.thinking')),
  );
  private formatted = formattedReplies();
  private readonly unsubscribe = onFormattedReplies((on) => {
    this.formatted = on;
    for (const block of this.transcript.messages.flatMap((m) => m.blocks)) {
      if (block.kind === 'text' && !this.live.has(block.id)) this.drawBlock(block);
    }
  });
  private compactingState: { el: HTMLElement; timer: number } | null = null;
  private static manifests = new Map<string, Promise<AttachmentManifest | null>>();
  /**
   * While the events buffered on opening are applied: what streamed before shows at once, and a
   * turn settling is not said (the session says the ones a person waits for, once caught up).
   */
  catchUp = false;

  constructor(
    private readonly transcript: Transcript,
    private readonly hooks: ViewHooks,
  ) {
    this.render();
  }

  apply(changes: Change[]): void {
    let structure = false;
    for (const change of changes) {
      switch (change.type) {
        case 'structure':
          structure = true;
          break;
        case 'delta':
          this.delta(change.block, change.text);
          break;
        case 'block':
          this.drawBlock(change.block);
          structure = true; // the answer may now exist; dims may move
          break;
        case 'turn':
          structure = true;
          this.hooks.onTurn(change.turn, change.settled);
          if (change.settled && !this.catchUp) this.announceSettled(change.turn);
          break;
        case 'usage':
          this.drawUsage(change.turn);
          this.hooks.onUsage(change.turn);
          break;
      }
    }
    if (structure) this.render();
  }

  destroy(): void {
    for (const text of this.live.values()) text.settle();
    this.stopCompacting();
    this.unsubscribe();
  }

  /** Reconciles the elements with the transcript's messages and turns. */
  render(): void {
    const wanted: Node[] = [];
    const keepArticles = new Set<string>();
    const turns = this.transcript.turnList();
    if (!turns.some((t) => t.compacting && isOpen(t.status))) this.stopCompacting();
    const compactionBlock = this.newestCompaction();
    let dim = compactionBlock !== null;

    for (const turn of turns) {
      const messages = this.transcript.messagesOf(turn.id).filter((m) => m.blocks.length > 0);
      const opening = messages.find((m) => m.role === 'user');
      const hasAnswer = messages.some(
        (m) =>
          m.role === 'assistant' &&
          m.blocks.some((b) => b.block?.kind === 'text' && !b.block.narration && !b.block.steering),
      );
      for (const message of messages) {
        const article = this.article(message);
        keepArticles.add(message.key);
        article.classList.toggle('has-answer', message.role === 'assistant' && hasAnswer);
        const children = message.blocks.map((block) => this.blockEl(block, message));
        // Messages above the newest compaction are dimmed until hovered; in the message that holds
        // it, the blocks before it are.
        const at = compactionBlock ? message.blocks.indexOf(compactionBlock) : -1;
        if (at >= 0) dim = false;
        article.classList.toggle('dimmed', dim);
        children.forEach((el, i) => el.classList.toggle('dimmed', i < at));
        syncChildren(article.querySelector('.blocks')!, children);
        wanted.push(article);
        const effort = message === opening ? this.effortOf(turn) : null;
        if (effort) wanted.push(effort);
        effort?.classList.toggle('dimmed', dim);
      }
      const usage = messages.length > 0 && turn.kind === 'turn' ? this.usageOf(turn) : null;
      if (usage) wanted.push(usage);
      const indicator = this.indicatorFor(turn);
      if (indicator) wanted.push(indicator);
    }
    for (const key of Array.from(this.articles.keys())) if (!keepArticles.has(key)) this.articles.delete(key);
    syncChildren(this.el, wanted);
  }

  private indicatorFor(turn: TurnModel): HTMLElement | null {
    if (turn.compacting && isOpen(turn.status)) return this.startCompacting();
    if (turn.status === 'queued' || turn.status === 'running') {
      const streaming = this.transcript
        .messagesOf(turn.id)
        .some((m) => m.blocks.some((b) => b.block === null || this.live.has(b.id)));
      return streaming ? null : this.thinkingIndicator;
    }
    if (turn.status === 'failed' || turn.status === 'cut_off') return this.note(turn);
    return null;
  }

  /**
   * Why a turn failed or stopped, in words and with the code for support, and on the latest one
   * a `Retry` (POST /v1/turns/:id/retry: the same message again, as a new turn).
   */
  private note(turn: TurnModel): HTMLElement {
    let el = this.notes.get(turn.id);
    if (!el) {
      el = h('div', { class: 'turn-note', 'data-turn-status': turn.status });
      this.notes.set(turn.id, el);
    }
    const latest = this.transcript.latestTurn() === turn && turn.kind === 'turn';
    const drawn = `${turn.status} ${latest} ${turn.error}`;
    if (el.dataset.drawn === drawn) return el; // kept as it is: a focused Retry keeps its focus
    el.dataset.drawn = drawn;
    el.dataset.turnStatus = turn.status;
    const { reason, code } = describeFailure(turn.error);
    const text =
      turn.status === 'failed'
        ? t('turn.failed', { reason })
        : turn.error
          ? t('turn.stoppedWhy', { reason })
          : t('turn.stopped');
    const parts: Node[] = [h('p', { class: 'turn-note-text' }, text)];
    if (code && turn.error)
      parts.push(h('p', { class: 'turn-note-code', title: turn.error }, t('turn.code', { code })));
    if (latest) {
      const error = h('p', { class: 'request-error', role: 'alert' });
      const retry = h('button', { type: 'button', class: 'retry' }, t('turn.retry'));
      retry.addEventListener('click', async () => {
        retry.disabled = true;
        error.textContent = '';
        try {
          await this.hooks.api.retry(turn.id);
        } catch (err) {
          error.textContent = (err as Error).message;
          retry.disabled = false;
        }
      });
      parts.push(retry, error);
    }
    el.replaceChildren(...parts);
    return el;
  }

  /** A turn's tokens and cost, from its usage rows (summed by the API, then as they stream). */
  private usageOf(turn: TurnModel): HTMLElement {
    let el = this.usages.get(turn.id);
    if (!el) {
      el = h('p', { class: 'turn-usage', 'data-turn-id': turn.id, title: t('usage.label') });
      this.usages.set(turn.id, el);
    }
    this.drawUsage(turn);
    return el;
  }

  private drawUsage(turn: TurnModel): void {
    const el = this.usages.get(turn.id);
    if (!el) return;
    const { inputTokens, outputTokens, cost } = turn.usage;
    el.textContent =
      inputTokens + outputTokens === 0
        ? ''
        : t('usage.line', {
            input: formatNumber(inputTokens),
            output: formatNumber(outputTokens),
            cost: formatNumber(cost, { style: 'currency', currency: 'USD', maximumFractionDigits: 4 }),
          });
  }

  /** The level the turn ran at, as recorded on it, under the message that opened it. */
  private effortOf(turn: TurnModel): HTMLElement | null {
    if (turn.kind !== 'turn' || turn.effort === null) return null;
    let el = this.efforts.get(turn.id);
    if (!el) {
      el = h('p', { class: 'turn-effort', 'data-turn-id': turn.id });
      this.efforts.set(turn.id, el);
    }
    el.textContent = t('turn.effort', { level: turn.effort });
    return el;
  }

  /** The "Summarising conversation" divider, in place of the thinking indicator. */
  private startCompacting(): HTMLElement {
    if (this.compactingState) return this.compactingState.el;
    const clock = h('span', { class: 'clock', hidden: true, 'aria-hidden': 'true' });
    const el = h(
      'div',
      { class: 'indicator compacting', role: 'status' },
      h('span', { class: 'rule left' }),
      h('span', { class: 'shimmer' }, t('turn.summarising')),
      clock,
      h('span', { class: 'rule right' }),
    );
    const since = performance.now();
    const timer = window.setInterval(() => {
      const elapsed = performance.now() - since;
      if (elapsed < SCREEN_LIMITS.COMPACTION_CLOCK_AFTER_MS) return;
      const s = Math.floor(elapsed / 1000);
      clock.hidden = false;
      clock.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
    }, 250);
    this.compactingState = { el, timer };
    return el;
  }

  private stopCompacting(): void {
    if (!this.compactingState) return;
    window.clearInterval(this.compactingState.timer);
    this.compactingState = null;
  }

  private newestCompaction(): BlockModel | null {
    for (let i = this.transcript.messages.length - 1; i >= 0; i--) {
      const blocks = this.transcript.messages[i].blocks;
      for (let j = blocks.length - 1; j >= 0; j--)
        if (blocks[j].block?.kind === 'compaction') return blocks[j];
    }
    return null;
  }

  private article(message: MessageModel): HTMLElement {
    let article = this.articles.get(message.key);
    if (!article) {
      article = h(
        'article',
        {
          'data-role': message.role,
          'aria-label': message.role === 'user' ? t('conversation.you') : t('conversation.assistant'),
        },
        h('div', { class: 'blocks' }),
      );
      if (message.attachmentIds.length > 0) article.append(this.attachmentList(message.attachmentIds));
      // The label is drawn by the style sheet: the article's text stays the message's own.
      const copy = h('button', {
        type: 'button',
        class: 'copy',
        'aria-label': t('block.copy'),
        'data-label': t('block.copy'),
      });
      copy.addEventListener('click', () => void copyText(messageText(message), copy));
      article.append(h('div', { class: 'message-actions' }, copy));
      this.articles.set(message.key, article);
    }
    article.dataset.turnId = message.turnId;
    return article;
  }

  private attachmentList(ids: string[]): HTMLElement {
    const list = h('ul', { class: 'message-attachments', 'aria-label': t('tray.label') });
    for (const id of ids) {
      const label = h('span', {}, id);
      const item = h('li', { class: 'attachment-chip' }, label);
      list.append(item);
      let manifest = ConversationView.manifests.get(id);
      if (!manifest) {
        manifest = this.hooks.api.attachment(id).catch(() => null);
        ConversationView.manifests.set(id, manifest);
      }
      void manifest.then((m) => {
        if (!m) return;
        label.textContent = `${m.filename} · ${t(`tray.kind.${m.kind}`)}${m.status === 'failed' ? ` · ${t('tray.failed')}` : ''}`;
        const preview = attachmentPreview(this.hooks.api, m);
        if (preview) item.prepend(preview);
      });
    }
    return list;
  }

  private blockEl(block: BlockModel, message: MessageModel): HTMLElement {
    let el = this.blockEls.get(block.id);
    if (!el) {
      el = h('div', {
        class: `block ${block.kind}`,
        'data-block-kind': block.kind,
        'data-block-id': block.id,
      });
      this.blockEls.set(block.id, el);
      el.dataset.role = message.role;
      this.drawBlock(block, el);
    }
    return el;
  }

  private drawBlock(block: BlockModel, el = this.blockEls.get(block.id)): void {
    if (!el) return;
    const data = block.block;
    if (block.kind === 'text') {
      if (data?.kind === 'text') {
        el.toggleAttribute('data-narration', data.narration);
        el.toggleAttribute('data-steering', data.steering);
        const live = this.live.get(block.id);
        if (live) live.finish(data.text);
        else if (el.dataset.role === 'user') draw.userText(el, data.text);
        else {
          el.classList.remove('formatted');
          el.replaceChildren(data.text);
          if (this.formatted) void this.format(block, el, data.text);
        }
      } else if (!this.live.has(block.id)) {
        this.startLive(block, el);
      }
      return;
    }
    if (block.kind === 'thinking') {
      draw.thinking(el, data?.kind === 'thinking' ? data.text : block.streamed, data === null);
      return;
    }
    if (!data) return; // other kinds arrive whole
    switch (data.kind) {
      case 'tool_use':
        return draw.toolUse(el, data);
      case 'tool_result':
        return draw.toolResult(el, data);
      case 'compaction':
        return draw.compaction(el, data);
      case 'clarification_request':
      case 'approval_request':
        this.announceRequest(data);
        return draw.request(el, data, { api: this.hooks.api, turnId: block.turnId });
    }
  }

  /** A request that waits for the person is said in the live region once, as it arrives. */
  private announceRequest(data: BlockOf<'clarification_request' | 'approval_request'>): void {
    if (this.announced.has(data.id)) return;
    this.announced.add(data.id);
    const pending = data.kind === 'approval_request' ? data.approved === null : data.answer === null;
    if (!pending) return;
    this.hooks.announce(
      data.kind === 'approval_request'
        ? t('turn.announceApproval', { name: data.name })
        : t('turn.announceQuestion', { question: data.question }),
    );
  }

  /** The settled reply's Markdown drawn, once the formatter has loaded (plain text until then). */
  private async format(block: BlockModel, el: HTMLElement, text: string): Promise<void> {
    const { renderMarkdown } = await loadMarkdown();
    const data = block.block;
    if (this.formatted && data?.kind === 'text' && data.text === text && !this.live.has(block.id)) {
      renderMarkdown(el, text);
    }
  }

  private startLive(block: BlockModel, el: HTMLElement): void {
    const live = new LiveText(el, () => {
      this.live.delete(block.id);
      // Played out as plain text; the settled reply is then drawn as the setting says.
      if (this.formatted) this.drawBlock(block);
      this.render();
    });
    this.live.set(block.id, live);
    if (block.streamed) live.push(block.streamed, this.catchUp);
  }

  private delta(block: BlockModel, text: string): void {
    if (block.kind === 'thinking') {
      const el = this.blockEls.get(block.id);
      if (el) draw.thinking(el, block.streamed, true);
      return;
    }
    const live = this.live.get(block.id);
    if (live) live.push(text, this.catchUp);
    else {
      const el = this.blockEls.get(block.id);
      if (el) this.startLive(block, el);
      this.render();
    }
  }

  /** Says how a settled turn ended: its answer, that it was stopped, or why it failed. */
  announceSettled(turn: TurnModel): void {
    if (turn.status === 'cut_off') return this.hooks.announce(t('turn.announceStopped'));
    if (turn.status === 'failed') {
      // The reason follows the status on the stream: say the failure once it is there.
      window.setTimeout(
        () => this.hooks.announce(t('turn.announceFailed', { reason: describeFailure(turn.error).reason })),
        300,
      );
      return;
    }
    const answer = this.transcript
      .messagesOf(turn.id)
      .flatMap((m) => (m.role === 'assistant' ? m.blocks : []))
      .map((b) => b.block)
      .filter((b) => b?.kind === 'text' && !b.narration)
      .at(-1);
    if (answer?.kind === 'text') this.hooks.announce(answer.text);
  }
}

let markdown: Promise<typeof import('./markdown')> | null = null;
function loadMarkdown(): Promise<typeof import('./markdown')> {
  markdown ??= import('./markdown');
  return markdown;
}

/** What `Copy` takes of a message: its text as written (the reply's Markdown, not its drawing). */
function messageText(message: MessageModel): string {
  const texts = message.blocks.flatMap((b) => (b.block?.kind === 'text' ? [b.block] : []));
  const answer = texts.filter((b) => !b.narration);
  return (answer.length > 0 ? answer : texts).map((b) => b.text).join('\n\n');
}

/** Makes `parent`'s children exactly `children`, in order, moving only what is out of place. */
function syncChildren(parent: Element, children: Node[]): void {
  const keep = new Set(children);
  for (const node of Array.from(parent.childNodes)) if (!keep.has(node)) node.remove();
  let cursor = parent.firstChild;
  for (const child of children) {
    if (child === cursor) {
      cursor = cursor.nextSibling;
      continue;
    }
    parent.insertBefore(child, cursor);
  }
}
