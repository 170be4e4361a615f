import type { Api, AttachmentManifest } from './api';
import { h } from './dom';

const POLL_MS = 700;

interface Upload {
  file: File;
  manifest: AttachmentManifest | null;
  error: string | null;
  el: HTMLLIElement;
  removed: boolean;
}

/**
 * The files attached to the message being written: uploaded at once (POST /v1/attachments), each
 * with its manifest's live status, polled until the document is read or has failed.
 */
export class AttachmentTray {
  readonly el = h('ul', { class: 'tray', 'aria-label': 'Attachments', hidden: true });
  private uploads: Upload[] = [];

  constructor(
    private readonly api: Api,
    private readonly conversationId: string,
  ) {}

  add(files: FileList | File[]): void {
    for (const file of Array.from(files)) {
      const upload: Upload = {
        file,
        manifest: null,
        error: null,
        el: h('li', { class: 'tray-item' }),
        removed: false,
      };
      this.uploads.push(upload);
      this.el.append(upload.el);
      this.draw(upload);
      void this.upload(upload);
    }
    this.el.hidden = this.uploads.length === 0;
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
    return this.uploads.flatMap((u) => (u.manifest ? [u.manifest.id] : []));
  }

  get count(): number {
    return this.uploads.length;
  }

  get uploading(): boolean {
    return this.uploads.some((u) => !u.manifest && !u.error);
  }

  clear(): void {
    for (const u of this.uploads) u.removed = true;
    this.uploads = [];
    this.el.replaceChildren();
    this.el.hidden = true;
  }

  private remove(upload: Upload): void {
    upload.removed = true;
    upload.el.remove();
    this.uploads = this.uploads.filter((u) => u !== upload);
    this.el.hidden = this.uploads.length === 0;
  }

  private async upload(upload: Upload): Promise<void> {
    try {
      upload.manifest = await this.api.upload(upload.file, this.conversationId);
    } catch (err) {
      upload.error = (err as Error).message;
      this.draw(upload);
      return;
    }
    this.draw(upload);
    while (!upload.removed && upload.manifest && !['finished', 'failed'].includes(upload.manifest.status)) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      if (upload.removed) return;
      try {
        upload.manifest = await this.api.attachment(upload.manifest.id);
      } catch {
        // a hiccup: the next poll tries again
      }
      this.draw(upload);
    }
  }

  private draw(upload: Upload): void {
    const m = upload.manifest;
    const name = m?.filename ?? upload.file.name;
    const parts: (Node | string | null)[] = [h('span', { class: 'tray-name' }, name)];
    if (upload.error) {
      parts.push(h('span', { class: 'tray-status failed' }, upload.error));
    } else if (!m) {
      parts.push(h('span', { class: 'tray-status' }, 'uploading…'));
    } else {
      upload.el.dataset.status = m.status;
      parts.push(h('span', { class: 'tray-kind' }, m.kind));
      parts.push(h('span', { class: 'tray-status' }, statusText(m)));
      if (m.kind === 'document' && m.pageCount) {
        parts.push(
          h('progress', {
            max: m.pageCount,
            value: m.pagesRead ?? 0,
            'aria-label': `Pages read of ${name}`,
          }),
        );
      }
      if (m.unreadablePages && m.unreadablePages.length > 0) {
        parts.push(h('span', { class: 'tray-warning' }, `unreadable pages: ${m.unreadablePages.join(', ')}`));
      }
      if (m.headings && m.headings.length > 0) {
        parts.push(
          h(
            'details',
            { class: 'tray-headings' },
            h('summary', {}, `${m.headings.length} heading${m.headings.length === 1 ? '' : 's'}`),
            h('ol', {}, ...m.headings.map((heading) => h('li', {}, heading))),
          ),
        );
      }
    }
    parts.push(
      h(
        'button',
        {
          type: 'button',
          class: 'tray-remove',
          'aria-label': `Remove ${name}`,
          onclick: () => this.remove(upload),
        },
        '×',
      ),
    );
    upload.el.replaceChildren(...parts.filter((p): p is Node | string => p !== null));
  }
}

function statusText(m: AttachmentManifest): string {
  if (m.status === 'failed') return `failed${m.error ? `: ${m.error}` : ''}`;
  if (m.kind === 'picture') {
    const p = m.picture;
    if (m.status !== 'finished' || !p) return m.status;
    const reduced = p.width !== p.originalWidth || p.height !== p.originalHeight;
    return reduced
      ? `${p.width}×${p.height} (from ${p.originalWidth}×${p.originalHeight})`
      : `${p.width}×${p.height}`;
  }
  if (m.status === 'pending') return 'waiting to be read';
  const pages = m.pageCount ? `${m.pagesRead ?? 0}/${m.pageCount} pages` : '';
  if (m.status === 'reading') return `reading ${pages}`.trim();
  return pages ? `read · ${pages}` : 'read';
}
