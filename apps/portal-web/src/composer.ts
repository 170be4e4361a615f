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
import { draftKey, loadDraft, saveDraft } from './drafts';
import { t } from './i18n';
import type { TurnModel } from './transcript';

export interface ComposerOptions {
  api: Api;
  /** Null for a conversation not started yet: the first message creates it (`create`). */
  conversationId: string | null;
  create?: () => Promise<string>;
  /** A message was taken, as the turn `turnId` of the conversation. */
  onSent?: (sent: { conversationId: string; turnId: string }) => void;
  agent: AgentView;
  /** The agent's model, and whether it can see pictures. */
  model: { id: string; sees: boolean };
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
  /** While the notice's cause holds; once it is gone, so is the notice. */
  private noticeHolds: (() => boolean) | null = null;
  private readonly draftKey: string;
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
    this.draftKey = draftKey(
      options.conversationId ? { conversationId: options.conversationId } : { agentId: options.agent.id },
    );
    this.tray = new AttachmentTray({
      api: options.api,
      conversationId: options.conversationId,
      model: options.model,
      onChange: () => this.saveDraft(),
    });
    this.suggestions = catalogue(options.agent, options.skills);

    this.field = h('textarea', {
      id: fieldId,
      rows: 2,
      placeholder: t('composer.placeholder'),
      'aria-autocomplete': 'list',
      'aria-controls': listId,
      autocomplete: 'off',
    });
    this.list = h('ul', {
      id: listId,
      class: 'completion',
      role: 'listbox',
      'aria-label': t('composer.skills'),
      hidden: true,
    });
    this.effortSelect = h(
      'select',
      {
        id: effortId,
        title: options.reasons ? t('composer.effortTitle') : t('composer.effortRecorded'),
      },
      ...EFFORTS.map((e) => h('option', { value: e, selected: e === options.effort }, e)),
    );
    const file = h('input', {
      id: fileId,
      type: 'file',
      multiple: true,
      class: 'visually-hidden',
      'aria-label': t('composer.attach'),
    });
    this.sendButton = h('button', { type: 'submit', class: 'send' }, t('composer.send'));
    this.cancelButton = h('button', { type: 'button', class: 'cancel', hidden: true }, t('composer.cancel'));

    this.el = h(
      'form',
      { class: 'composer', 'aria-label': t('composer.label'), 'data-drop-hint': t('composer.dropHere') },
      this.tray.el,
      this.notice,
      h(
        'div',
        { class: 'composer-field' },
        h('label', { for: fieldId, class: 'visually-hidden' }, t('composer.message')),
        this.field,
        this.list,
      ),
      h(
        'div',
        { class: 'composer-bar' },
        file,
        h('label', { for: fileId, class: 'attach', title: t('composer.attach') }, t('composer.attachShort')),
        h('label', { for: effortId, class: 'effort-label' }, t('composer.effort')),
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
      this.saveDraft();
    });
    // Files dropped on the composer or pasted into the field are attached like picked ones.
    this.el.addEventListener('dragover', (e) => {
      if (!e.dataTransfer?.types.includes('Files')) return;
      e.preventDefault();
      this.el.classList.add('dropping');
    });
    this.el.addEventListener('dragleave', () => this.el.classList.remove('dropping'));
    this.el.addEventListener('drop', (e) => {
      this.el.classList.remove('dropping');
      if (!e.dataTransfer || e.dataTransfer.files.length === 0) return;
      e.preventDefault();
      this.tray.add(e.dataTransfer.files);
    });
    this.field.addEventListener('paste', (e) => {
      const files = e.clipboardData?.files;
      if (!files || files.length === 0) return;
      if (!e.clipboardData!.types.includes('text/plain')) e.preventDefault();
      this.tray.add(files);
    });
    this.field.addEventListener('click', () => this.complete());
    this.field.addEventListener('keydown', (e) => this.onKey(e));
    this.field.addEventListener('blur', () => setTimeout(() => this.closeList(), 100));
    this.el.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.send();
    });
    this.cancelButton.addEventListener('click', () => void this.cancel());
    const draft = loadDraft(this.draftKey);
    this.field.value = draft.text;
    this.tray.restore(draft.attachmentIds);
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
        ? t('composer.placeholderPaused')
        : turn
          ? t('composer.placeholderSteer')
          : t('composer.placeholder');
    if (this.noticeHolds && !this.noticeHolds()) this.say('');
  }

  private saveDraft(): void {
    saveDraft(this.draftKey, { text: this.field.value, attachmentIds: this.tray.ids() });
  }

  /** The field grows with what is typed (up to a cap in the style sheet). */
  private fit(): void {
    this.field.style.height = 'auto';
    this.field.style.height = `${this.field.scrollHeight}px`;
  }

  /** Says why something was refused; `holds` tells when that is no longer so (then it goes). */
  private say(text: string, holds: (() => boolean) | null = null): void {
    this.notice.textContent = text;
    this.noticeHolds = text ? holds : null;
  }

  private async send(): Promise<void> {
    const text = this.field.value;
    if (!text.trim()) {
      if (this.tray.count > 0) this.say(t('composer.needText'));
      return;
    }
    const turn = this.options.openTurn();
    const parsed = parseLeadingSlugs(text);
    if (parsed.isCompact && turn) {
      this.say(t('composer.compactRunning'), () => this.options.openTurn() !== null);
      return;
    }
    if (parsed.isCompact && this.tray.count > 0) {
      this.say(t('composer.compactAttachments'), () => this.tray.count > 0);
      return;
    }
    if (turn?.status === 'paused') {
      this.say(t('composer.paused'), () => this.options.openTurn()?.status === 'paused');
      return;
    }
    const refused = this.tray.refused;
    if (refused) {
      this.say(refused, () => this.tray.refused !== null);
      return;
    }
    if (this.tray.uploading) {
      this.say(t('composer.uploading'), () => this.tray.uploading);
      return;
    }
    // Checked after the refusals above: a turn can open (over SSE) before its POST has answered.
    if (this.sending) return;
    this.sending = true;
    this.sendButton.disabled = true;
    const created = this.options.conversationId === null;
    let conversationId: string | null = null;
    try {
      conversationId = this.options.conversationId ?? (await this.options.create!());
      const attachmentIds = this.tray.ids();
      const { turnId } = await this.options.api.send(conversationId, {
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
      this.saveDraft();
      this.options.onSent?.({ conversationId, turnId });
    } catch (err) {
      // A conversation started for a message that was refused is removed: no empty ones are left.
      if (created && conversationId)
        void this.options.api.deleteConversation(conversationId).catch(() => undefined);
      this.say(
        err instanceof ApiError ? err.message : t('composer.notSent', { message: (err as Error).message }),
      );
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
      const typedWhole = this.shown[this.active].slug === this.query();
      if ((e.key === 'Enter' && !typedWhole) || e.key === 'Tab') {
        e.preventDefault();
        this.accept(this.shown[this.active]);
        return;
      }
      // The command is typed in full (`/compact`): Enter sends it, as anywhere else.
      if (e.key === 'Enter') this.closeList();
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

  /** The partial slug at the caret, or null when the caret is not in one. */
  private query(): string | null {
    if (this.field.selectionStart !== this.field.selectionEnd) return null;
    const before = this.field.value.slice(0, this.field.selectionStart ?? 0);
    return SLUG_AT_CARET.exec(before)?.[1] ?? null;
  }

  private complete(): void {
    const query = this.query();
    if (query === null) return this.closeList();
    // Anywhere in the slug (`/check` finds `fact-check`), those that start with it first.
    const found = this.suggestions.filter((s) => s.slug.includes(query));
    this.shown = [
      ...found.filter((s) => s.slug.startsWith(query)),
      ...found.filter((s) => !s.slug.startsWith(query)),
    ].slice(0, 8);
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
    this.saveDraft();
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
      .map((s) => entry(s, s.published ? t('skill.unbound') : t('skill.draft'))),
    {
      slug: COMPACT_COMMAND,
      label: t('block.compactPill'),
      detail: t('compact.detail'),
    },
  ];
}
