import { COMPACT_COMMAND, parseLeadingSlugs } from '@portal/prompt';
import {
  ApiError,
  EFFORTS,
  type AgentView,
  type Api,
  type AttachmentManifest,
  type Effort,
  type SkillView,
} from './api';
import { AttachmentTray } from './attachments';
import { h, uid } from './dom';
import type { TurnModel } from './transcript';

export interface ComposerOptions {
  api: Api;
  conversationId: string;
  agent: AgentView;
  /** What GET /v1/skills shows the caller. */
  skills: SkillView[];
  /** The model reasons (effort is sent); otherwise the level is only recorded. */
  reasons: boolean;
  /** The agent's effort: the menu's level, and again after each message (an override is for one). */
  effort: Effort;
  openTurn(): TurnModel | null;
}

interface Suggestion {
  slug: string;
  label: string;
  detail: string;
}

/** The partial `/slug` at the caret, within the run of leading slugs. */
const SLUG_AT_CARET = /^(?:\s*\/[a-z0-9][a-z0-9-]*\s+)*\s*\/([a-z0-9-]*)$/;

/**
 * The message composer: text with `/slug` completion, effort, attachments, Send, and Cancel while
 * a turn runs. What the gateway would refuse for a reason the composer knows, it refuses itself
 * and says why.
 */
export class Composer {
  readonly el: HTMLFormElement;
  private readonly field: HTMLTextAreaElement;
  private readonly notice = h('p', { class: 'composer-notice', role: 'alert' });
  private readonly list: HTMLUListElement;
  private readonly effortSelect: HTMLSelectElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly cancelButton: HTMLButtonElement;
  private readonly tray: AttachmentTray;
  private readonly suggestions: Suggestion[];
  private shown: Suggestion[] = [];
  private active = 0;
  private sending = false;

  constructor(private readonly options: ComposerOptions) {
    const fieldId = uid('message');
    const listId = uid('slugs');
    const effortId = uid('effort');
    const fileId = uid('file');
    this.tray = new AttachmentTray(options.api, options.conversationId);
    this.suggestions = catalogue(options.agent, options.skills);

    this.field = h('textarea', {
      id: fieldId,
      rows: 2,
      placeholder: 'Write a message — / for skills',
      'aria-autocomplete': 'list',
      'aria-controls': listId,
      autocomplete: 'off',
    });
    this.list = h('ul', {
      id: listId,
      class: 'completion',
      role: 'listbox',
      'aria-label': 'Skills',
      hidden: true,
    });
    this.effortSelect = h(
      'select',
      {
        id: effortId,
        title: options.reasons
          ? 'How hard the model thinks'
          : 'This model does not reason: the level is recorded only',
      },
      ...EFFORTS.map((e) => h('option', { value: e, selected: e === options.effort }, e)),
    );
    const file = h('input', {
      id: fileId,
      type: 'file',
      multiple: true,
      class: 'visually-hidden',
      'aria-label': 'Attach files',
    });
    this.sendButton = h('button', { type: 'submit', class: 'send' }, 'Send');
    this.cancelButton = h('button', { type: 'button', class: 'cancel', hidden: true }, 'Cancel');

    this.el = h(
      'form',
      { class: 'composer', 'aria-label': 'Composer' },
      this.tray.el,
      this.notice,
      h(
        'div',
        { class: 'composer-field' },
        h('label', { for: fieldId, class: 'visually-hidden' }, 'Message'),
        this.field,
        this.list,
      ),
      h(
        'div',
        { class: 'composer-bar' },
        file,
        h('label', { for: fileId, class: 'attach', title: 'Attach files' }, 'Attach'),
        h('label', { for: effortId, class: 'effort-label' }, 'Effort'),
        this.effortSelect,
        h('span', { class: 'spacer' }),
        this.cancelButton,
        this.sendButton,
      ),
    );

    file.addEventListener('change', () => {
      if (file.files) this.tray.add(file.files);
      file.value = '';
    });
    this.field.addEventListener('input', () => {
      this.say('');
      this.fit();
      this.complete();
    });
    this.field.addEventListener('click', () => this.complete());
    this.field.addEventListener('keydown', (e) => this.onKey(e));
    this.field.addEventListener('blur', () => setTimeout(() => this.closeList(), 100));
    this.el.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });
    this.cancelButton.addEventListener('click', () => void this.cancel());
    this.update();
  }

  focus(): void {
    this.field.focus();
  }

  /** An attachment's manifest as the stream announced it. */
  attachmentProgress(manifest: AttachmentManifest): void {
    this.tray.update(manifest);
  }

  /** A turn's status changed. */
  update(): void {
    const turn = this.options.openTurn();
    this.cancelButton.hidden = !turn;
    this.cancelButton.disabled = false;
    this.el.dataset.turn = turn?.status ?? 'none';
    this.field.placeholder =
      turn?.status === 'paused'
        ? 'The agent is waiting for your answer above'
        : turn
          ? 'Steer the running turn — it reads this before its next step'
          : 'Write a message — / for skills';
  }

  /** The field grows with what is typed (up to a cap in the style sheet). */
  private fit(): void {
    this.field.style.height = 'auto';
    this.field.style.height = `${this.field.scrollHeight}px`;
  }

  private say(text: string): void {
    this.notice.textContent = text;
  }

  private async send(): Promise<void> {
    const text = this.field.value;
    if (!text.trim()) {
      if (this.tray.count > 0) this.say('Write a few words to go with the attachments.');
      return;
    }
    const turn = this.options.openTurn();
    const parsed = parseLeadingSlugs(text);
    if (parsed.isCompact && turn) {
      this.say(
        'A turn is running: /compact would reach it as plain text. Wait until it finishes, or cancel it first.',
      );
      return;
    }
    if (parsed.isCompact && this.tray.count > 0) {
      this.say('/compact cannot carry attachments: remove them first.');
      return;
    }
    if (turn?.status === 'paused') {
      this.say('The agent is waiting for your answer to its request above.');
      return;
    }
    if (this.tray.uploading) {
      this.say('Wait until the attachments have uploaded.');
      return;
    }
    // Checked after the refusals above: a turn can open (over SSE) before its POST has answered.
    if (this.sending) return;
    this.sending = true;
    this.sendButton.disabled = true;
    try {
      const attachmentIds = this.tray.ids();
      await this.options.api.send(this.options.conversationId, {
        text,
        ...(attachmentIds.length > 0 ? { attachmentIds } : {}),
        effort: this.effortSelect.value as Effort,
      });
      // What was typed while the message was on its way stays in the field.
      if (this.field.value === text) {
        this.field.value = '';
        this.fit();
      }
      this.tray.clear();
      this.effortSelect.value = this.options.effort;
      this.say('');
    } catch (err) {
      this.say(err instanceof ApiError ? err.message : `Not sent: ${(err as Error).message}`);
    } finally {
      this.sending = false;
      this.sendButton.disabled = false;
      this.field.focus();
    }
  }

  private async cancel(): Promise<void> {
    const turn = this.options.openTurn();
    if (!turn) return;
    this.cancelButton.disabled = true;
    try {
      await this.options.api.cancel(turn.id);
    } catch (err) {
      this.say((err as Error).message);
      this.cancelButton.disabled = false;
    }
  }

  private onKey(e: KeyboardEvent): void {
    if (!this.list.hidden && this.shown.length > 0) {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.active = (this.active + (e.key === 'ArrowDown' ? 1 : this.shown.length - 1)) % this.shown.length;
        this.drawList();
        return;
      }
      if (e.key === 'Enter' || e.key === 'Tab') {
        e.preventDefault();
        this.accept(this.shown[this.active]);
        return;
      }
      if (e.key === 'Escape') {
        e.preventDefault();
        this.closeList();
        return;
      }
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.el.requestSubmit();
    }
  }

  private complete(): void {
    const before = this.field.value.slice(0, this.field.selectionStart ?? 0);
    const match = SLUG_AT_CARET.exec(before);
    if (!match || this.field.selectionStart !== this.field.selectionEnd) return this.closeList();
    const query = match[1];
    this.shown = this.suggestions.filter((s) => s.slug.startsWith(query)).slice(0, 8);
    this.active = 0;
    if (this.shown.length === 0) return this.closeList();
    this.drawList();
  }

  private drawList(): void {
    const items = this.shown.map((s, i) => {
      const id = `${this.list.id}-${i}`;
      const li = h(
        'li',
        { id, role: 'option', 'aria-selected': String(i === this.active), class: 'completion-item' },
        h('span', { class: 'completion-slug' }, `/${s.slug}`),
        h('span', { class: 'completion-label' }, s.label),
        h('span', { class: 'completion-detail' }, s.detail),
      );
      li.addEventListener('mousedown', (e) => {
        e.preventDefault(); // keep the focus in the field
        this.accept(s);
      });
      return li;
    });
    this.list.replaceChildren(...items);
    this.list.hidden = false;
    this.field.setAttribute('aria-activedescendant', `${this.list.id}-${this.active}`);
  }

  private closeList(): void {
    this.list.hidden = true;
    this.shown = [];
    this.field.removeAttribute('aria-activedescendant');
  }

  private accept(s: Suggestion): void {
    const caret = this.field.selectionStart ?? 0;
    const value = this.field.value;
    const start = value.lastIndexOf('/', caret - 1);
    const after = value.slice(caret).replace(/^\S*\s?/, '');
    const inserted = `/${s.slug} `;
    this.field.value = value.slice(0, start) + inserted + after;
    const at = start + inserted.length;
    this.field.setSelectionRange(at, at);
    this.closeList();
    this.field.focus();
  }
}

/**
 * What `/` offers: the agent's bound skills first (its catalogue), then every other skill the
 * caller may select (visible and active, bound or not), and `/compact`.
 */
function catalogue(agent: AgentView, skills: SkillView[]): Suggestion[] {
  const bound = new Set(agent.skills ?? []);
  const isBound = (s: SkillView) => bound.has(s.slug) || bound.has(s.id);
  const active = skills.filter((s) => s.status === 'active');
  const entry = (s: SkillView, note: string): Suggestion => ({
    slug: s.slug,
    label: s.name,
    detail: note ? `${s.description} (${note})` : s.description,
  });
  const bySlug = (a: SkillView, b: SkillView) => a.slug.localeCompare(b.slug);
  return [
    ...active
      .filter(isBound)
      .sort(bySlug)
      .map((s) => entry(s, '')),
    ...active
      .filter((s) => !isBound(s))
      .sort(bySlug)
      .map((s) => entry(s, s.published ? 'not bound to this agent' : 'draft')),
    {
      slug: COMPACT_COMMAND,
      label: 'Compact',
      detail: 'Summarise the conversation so far; instructions may follow.',
    },
  ];
}
