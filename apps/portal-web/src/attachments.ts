import type { Api, AttachmentManifest } from './api';
import { h } from './dom';
import { formatNumber, t } from './i18n';

const POLL_MS = 700;

interface Upload {
  name: string;
  file: File | null;
  manifest: AttachmentManifest | null;
  error: string | null;
  el: HTMLLIElement;
  removed: boolean;
}

export interface TrayOptions {
  api: Api;
  conversationId: string | null;
  /** The model of the conversation, and whether it can see pictures (refused at attach time). */
  model: { id: string; sees: boolean };
  /** What the tray holds changed (the draft keeps the uploaded ids). */
  onChange(): void;
}

/**
 * The files attached to the message being written: uploaded at once (POST /v1/attachments), each
 * with its manifest's live status, polled until the document is read or has failed. A picture for a
 * model that cannot see, or a failed upload, stays in the tray saying why, until removed.
 */
export class AttachmentTray {
  readonly el = h('ul', { class: 'tray', 'aria-label': t('tray.label'), hidden: true });
  private uploads: Upload[] = [];

  constructor(private readonly options: TrayOptions) {}

  add(files: FileList | File[]): void {
    for (const file of Array.from(files)) {
      const upload = this.track(file.name, file, null);
      // The browser's own idea of the type: a picture is refused before it is even sent.
      if (file.type.startsWith('image/') && !this.options.model.sees) {
        upload.error = this.cannotSee(file.name);
        this.draw(upload);
        continue;
      }
      void this.upload(upload);
    }
  }

  /** Uploads kept by a draft: shown again with their current manifest. */
  restore(ids: string[]): void {
    for (const id of ids) {
      const upload = this.track(id, null, null);
      void this.options.api.attachment(id).then(
        (manifest) => {
          upload.manifest = manifest;
          upload.name = manifest.filename;
          this.check(upload);
          void this.poll(upload);
        },
        () => this.remove(upload),
      );
    }
  }

  /** A newer manifest of one of the uploads (pushed on the conversation's stream). */
  update(manifest: AttachmentManifest): void {
    const upload = this.uploads.find((u) => u.manifest?.id === manifest.id);
    // The poll may already know more: a settled manifest never goes back to reading.
    if (!upload || ['finished', 'failed'].includes(upload.manifest!.status)) return;
    upload.manifest = manifest;
    this.draw(upload);
  }

  /** Ids of what uploaded, in order. */
  ids(): string[] {
    return this.uploads.flatMap((u) => (u.manifest && !u.error ? [u.manifest.id] : []));
  }

  get count(): number {
    return this.uploads.length;
  }

  get uploading(): boolean {
    return this.uploads.some((u) => !u.manifest && !u.error);
  }

  /** The first upload that cannot go with the message, and why. */
  get refused(): string | null {
    return this.uploads.find((u) => u.error)?.error ?? null;
  }

  clear(): void {
    for (const u of this.uploads) u.removed = true;
    this.uploads = [];
    this.el.replaceChildren();
    this.el.hidden = true;
    this.options.onChange();
  }

  private track(name: string, file: File | null, manifest: AttachmentManifest | null): Upload {
    const upload: Upload = {
      name,
      file,
      manifest,
      error: null,
      el: h('li', { class: 'tray-item' }),
      removed: false,
    };
    this.uploads.push(upload);
    this.el.append(upload.el);
    this.el.hidden = false;
    this.draw(upload);
    return upload;
  }

  private remove(upload: Upload): void {
    upload.removed = true;
    upload.el.remove();
    this.uploads = this.uploads.filter((u) => u !== upload);
    this.el.hidden = this.uploads.length === 0;
    this.options.onChange();
  }

  private cannotSee(name: string): string {
    return t('composer.cannotSee', { model: this.options.model.id, name });
  }

  /** What the portal found the file to be decides: a picture the model cannot see is refused. */
  private check(upload: Upload): void {
    if (upload.manifest?.kind === 'picture' && !this.options.model.sees)
      upload.error = this.cannotSee(upload.name);
    this.draw(upload);
    this.options.onChange();
  }

  private async upload(upload: Upload): Promise<void> {
    try {
      upload.manifest = await this.options.api.upload(upload.file!, this.options.conversationId);
    } catch (err) {
      upload.error = t('composer.uploadFailed', { name: upload.name }) + ` (${(err as Error).message})`;
      this.draw(upload);
      return;
    }
    this.check(upload);
    await this.poll(upload);
  }

  private async poll(upload: Upload): Promise<void> {
    while (!upload.removed && upload.manifest && !['finished', 'failed'].includes(upload.manifest.status)) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (upload.removed) return;
      try {
        upload.manifest = await this.options.api.attachment(upload.manifest.id);
      } catch {
        // a hiccup: the next poll tries again
      }
      this.draw(upload);
    }
  }

  private draw(upload: Upload): void {
    const m = upload.manifest;
    const name = m?.filename ?? upload.name;
    const parts: (Node | string | null)[] = [h('span', { class: 'tray-name' }, name)];
    if (m) {
      upload.el.dataset.status = m.status;
      const preview = attachmentPreview(this.options.api, m);
      if (preview) parts.unshift(preview);
      parts.push(h('span', { class: 'tray-kind' }, t(`tray.kind.${m.kind}`)));
    }
    if (upload.error) {
      upload.el.dataset.refused = '';
      parts.push(h('span', { class: 'tray-status failed', role: 'alert' }, upload.error));
    } else if (!m) {
      parts.push(h('span', { class: 'tray-status' }, t('tray.uploading')));
    } else {
      parts.push(...manifestDetails(m));
    }
    parts.push(
      h(
        'button',
        {
          type: 'button',
          class: 'tray-remove',
          'aria-label': t('tray.remove', { name }),
          onclick: () => this.remove(upload),
        },
        '×',
      ),
    );
    upload.el.replaceChildren(...parts.filter((p): p is Node | string => p !== null));
  }
}

/** A document's manifest as a person reads it: status, pages read, unreadable pages, headings. */
function manifestDetails(m: AttachmentManifest): Node[] {
  const parts: Node[] = [h('span', { class: 'tray-status' }, statusText(m))];
  if (m.kind === 'document' && m.pageCount) {
    parts.push(
      h('progress', {
        max: m.pageCount,
        value: m.pagesRead ?? 0,
        'aria-label': t('tray.pages', { name: m.filename }),
      }),
    );
  }
  if (m.unreadablePages && m.unreadablePages.length > 0) {
    parts.push(
      h('span', { class: 'tray-warning' }, t('tray.unreadable', { pages: m.unreadablePages.join(', ') })),
    );
  }
  if (m.headings && m.headings.length > 0) {
    parts.push(
      h(
        'details',
        { class: 'tray-headings' },
        h('summary', {}, t('tray.headings', { count: m.headings.length })),
        h('ol', {}, ...m.headings.map((heading) => h('li', {}, heading))),
      ),
    );
  }
  return parts;
}

const thumbnails = new Map<string, Promise<string | null>>();

/**
 * A picture's thumbnail, from its reduced bytes (GET /v1/attachments/:id/content, fetched with the
 * caller's credentials and shown from a blob: URL); null for a document or a picture not ready.
 */
export function attachmentPreview(api: Api, m: AttachmentManifest): HTMLElement | null {
  if (m.kind !== 'picture' || m.status !== 'finished') return null;
  const img = h('img', { class: 'thumbnail', alt: t('tray.thumbnail', { name: m.filename }), hidden: true });
  let url = thumbnails.get(m.id);
  if (!url) {
    url = api.attachmentContent(m.id).then(
      (blob) => URL.createObjectURL(blob),
      () => null,
    );
    thumbnails.set(m.id, url);
  }
  void url.then((src) => {
    if (!src) return;
    img.src = src;
    img.hidden = false;
  });
  return img;
}

function statusText(m: AttachmentManifest): string {
  if (m.status === 'failed') return m.error ? `${t('tray.failed')}: ${m.error}` : t('tray.failed');
  if (m.kind === 'picture') {
    const p = m.picture;
    if (m.status !== 'finished' || !p) return t(`tray.status.${m.status}`);
    const size = `${p.width}×${p.height}`;
    const reduced = p.width !== p.originalWidth || p.height !== p.originalHeight;
    return reduced ? t('tray.reduced', { size, original: `${p.originalWidth}×${p.originalHeight}` }) : size;
  }
  if (m.status === 'pending') return t('tray.waiting');
  const pages = m.pageCount ? t('tray.pagesRead', { read: m.pagesRead ?? 0, total: m.pageCount }) : '';
  const chars = m.status === 'finished' && m.chars ? t('tray.chars', { chars: formatNumber(m.chars) }) : '';
  return [t(`tray.status.${m.status}`), pages, chars].filter(Boolean).join(' · ');
}
