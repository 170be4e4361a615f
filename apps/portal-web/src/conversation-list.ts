import type { AgentView, Api, ConversationSummary } from './api';
import { h, uid } from './dom';
import { language, t, type MessageKey } from './i18n';

export interface ListHooks {
  api: Api;
  agents(): AgentView[];
  /** The open conversation's id, if any. */
  current(): string | null;
  open(id: string): void;
  /** The open conversation was deleted. */
  onDeleted(id: string): void;
  /** The list was loaded again: titles may have changed (a rename, a title from the agent). */
  onRefreshed(): void;
  announce(text: string): void;
}

const SEARCH_DELAY_MS = 250;

/**
 * The conversation list: grouped by date (today, yesterday, the week, the month, older), searched
 * by title and message text (GET /v1/conversations?q=, with a snippet of where the words were
 * found), each with `Rename` and `Delete`.
 */
export class ConversationList {
  readonly el: HTMLElement;
  private readonly list = h('div', { class: 'conversation-groups' });
  private readonly search: HTMLInputElement;
  private conversations: ConversationSummary[] = [];
  private query = '';
  private searchTimer = 0;
  private renaming: string | null = null;

  constructor(private readonly hooks: ListHooks) {
    const searchId = uid('search');
    this.search = h('input', {
      id: searchId,
      type: 'search',
      class: 'search',
      autocomplete: 'off',
      placeholder: t('list.search'),
    });
    this.search.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => void this.refresh(), SEARCH_DELAY_MS);
    });
    this.el = h(
      'div',
      { class: 'conversations' },
      h('label', { for: searchId, class: 'visually-hidden' }, t('list.search')),
      this.search,
      this.list,
    );
  }

  /** The list again from the API (after a turn, a rename, a new conversation). */
  async refresh(): Promise<void> {
    const query = this.search.value.trim();
    try {
      const found = await this.hooks.api.conversations(query);
      if (query !== this.search.value.trim()) return; // a newer search is on its way
      this.query = query;
      this.conversations = found;
      this.draw();
      this.hooks.onRefreshed();
    } catch {
      // kept as it was
    }
  }

  title(id: string): string | null {
    return this.conversations.find((c) => c.id === id)?.title ?? null;
  }

  draw(): void {
    const current = this.hooks.current();
    if (this.conversations.length === 0) {
      this.list.replaceChildren(this.query ? h('p', { class: 'list-empty' }, t('list.noMatch')) : '');
      return;
    }
    // Search results keep their order (most relevant first); the plain list is grouped by date.
    const groups = this.query ? [{ label: null, items: this.conversations }] : byDate(this.conversations);
    this.list.replaceChildren(
      ...groups.map(({ label, items }) => {
        const headingId = uid('group');
        return h(
          'section',
          { class: 'conversation-group', 'aria-labelledby': label ? headingId : null },
          label ? h('h2', { id: headingId, class: 'group-label' }, t(label)) : null,
          h('ul', { class: 'conversation-list' }, ...items.map((c) => this.item(c, c.id === current))),
        );
      }),
    );
  }

  private item(c: ConversationSummary, current: boolean): HTMLElement {
    const title = c.title ?? t('list.untitled');
    if (this.renaming === c.id) return h('li', { class: 'renaming' }, this.renameForm(c, title));
    const agent = this.hooks.agents().find((a) => a.id === c.agentId);
    const link = h(
      'a',
      { href: `/c/${encodeURIComponent(c.id)}`, 'aria-current': current ? 'page' : null },
      h('span', { class: 'title' }, title),
      c.snippet ? h('span', { class: 'snippet' }, c.snippet) : null,
      h('span', { class: 'meta' }, `${agent?.name ?? c.agentId} · ${when(c.updatedAt)}`),
    );
    link.addEventListener('click', (e) => {
      if (e.metaKey || e.ctrlKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      this.hooks.open(c.id);
    });
    const rename = h(
      'button',
      { type: 'button', class: 'icon', 'aria-label': t('list.rename'), title: t('list.rename') },
      '✎',
    );
    rename.addEventListener('click', () => {
      this.renaming = c.id;
      this.draw();
      this.list.querySelector<HTMLInputElement>('.renaming input')?.select();
    });
    const remove = h(
      'button',
      { type: 'button', class: 'icon', 'aria-label': t('list.delete'), title: t('list.delete') },
      '×',
    );
    remove.addEventListener('click', () => void this.remove(c, title));
    return h('li', {}, link, h('span', { class: 'item-actions' }, rename, remove));
  }

  private renameForm(c: ConversationSummary, title: string): HTMLElement {
    const fieldId = uid('rename');
    const field = h('input', {
      id: fieldId,
      type: 'text',
      value: c.title ?? '',
      maxlength: 200,
      required: true,
    });
    const error = h('p', { class: 'form-error', role: 'alert' });
    const cancel = h('button', { type: 'button' }, t('list.cancelRename'));
    const form = h(
      'form',
      { class: 'rename-form' },
      h('label', { for: fieldId, class: 'visually-hidden' }, t('list.renameTo', { title })),
      field,
      h('button', { type: 'submit' }, t('list.save')),
      cancel,
      error,
    );
    const done = () => {
      this.renaming = null;
      this.draw();
    };
    cancel.addEventListener('click', done);
    field.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') done();
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const next = field.value.trim();
      if (!next) return;
      try {
        await this.hooks.api.rename(c.id, next);
        c.title = next;
        done();
        void this.refresh();
      } catch (err) {
        error.textContent = (err as Error).message;
      }
    });
    return form;
  }

  private async remove(c: ConversationSummary, title: string): Promise<void> {
    if (!window.confirm(t('list.confirmDelete', { title }))) return;
    try {
      await this.hooks.api.deleteConversation(c.id);
    } catch (err) {
      this.hooks.announce((err as Error).message);
      return;
    }
    this.conversations = this.conversations.filter((x) => x.id !== c.id);
    this.draw();
    this.hooks.announce(t('list.deleted'));
    if (this.hooks.current() === c.id) this.hooks.onDeleted(c.id);
  }
}

type GroupKey = Extract<MessageKey, `list.${'today' | 'yesterday' | 'week' | 'month' | 'older'}`>;

/** Most recent first, in the groups people know from their mail. */
function byDate(items: ConversationSummary[]): { label: GroupKey; items: ConversationSummary[] }[] {
  const startOfToday = new Date();
  startOfToday.setHours(0, 0, 0, 0);
  const day = 86_400_000;
  const groupOf = (iso: string): GroupKey => {
    const age = startOfToday.getTime() - new Date(iso).getTime();
    if (age <= 0) return 'list.today';
    if (age <= day) return 'list.yesterday';
    if (age <= 7 * day) return 'list.week';
    if (age <= 30 * day) return 'list.month';
    return 'list.older';
  };
  const groups: { label: GroupKey; items: ConversationSummary[] }[] = [];
  for (const item of items) {
    const label = groupOf(item.updatedAt);
    const last = groups.at(-1);
    if (last?.label === label) last.items.push(item);
    else groups.push({ label, items: [item] });
  }
  return groups;
}

function when(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date().toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString(language(), { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString(language(), { month: 'short', day: 'numeric' });
}
