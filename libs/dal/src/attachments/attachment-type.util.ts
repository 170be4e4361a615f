import type { AttachmentKind } from '@portal/domain';

/** What an upload is, decided once from its bytes: never from its name or the client's content type. */
export type AttachmentType =
  { ok: true; kind: AttachmentKind; mimeType: string } | { ok: false; reason: string };

export const PICTURE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export const TEXT_TYPES = ['text/plain', 'text/markdown', 'text/csv', 'application/json'] as const;
export const PDF_TYPE = 'application/pdf';

const MAGIC: ReadonlyArray<{ mimeType: string; kind: AttachmentKind; test: (b: Buffer) => boolean }> = [
  {
    mimeType: 'image/png',
    kind: 'picture',
    test: (b) => starts(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  },
  { mimeType: 'image/jpeg', kind: 'picture', test: (b) => starts(b, [0xff, 0xd8, 0xff]) },
  { mimeType: 'image/gif', kind: 'picture', test: (b) => ascii(b, 0, 'GIF87a') || ascii(b, 0, 'GIF89a') },
  { mimeType: 'image/webp', kind: 'picture', test: (b) => ascii(b, 0, 'RIFF') && ascii(b, 8, 'WEBP') },
  { mimeType: PDF_TYPE, kind: 'document', test: (b) => ascii(b, 0, '%PDF-') },
];

/**
 * Pictures (PNG, JPEG, WebP, GIF) and PDFs by their magic numbers; anything else is text when it
 * holds no NUL byte (binary formats nearly always do), told apart by content: JSON when it parses
 * as an object or array, CSV when its first lines hold the same number of commas, markdown when it
 * has markdown headings or fences, else plain text. UTF-8 validity is checked when it is read.
 */
export function detectAttachmentType(bytes: Buffer): AttachmentType {
  if (bytes.length === 0) return { ok: false, reason: 'The file is empty' };
  const magic = MAGIC.find((m) => m.test(bytes));
  if (magic) return { ok: true, kind: magic.kind, mimeType: magic.mimeType };
  if (bytes.includes(0)) {
    return {
      ok: false,
      reason:
        'Unsupported file type: pictures may be PNG, JPEG, WebP or GIF; documents PDF, plain text, markdown, CSV or JSON (UTF-8)',
    };
  }
  return { ok: true, kind: 'document', mimeType: textSubtype(bytes.toString('utf8')) };
}

function textSubtype(text: string): string {
  const body = text.replace(/^\uFEFF/, '').trim();
  if (/^[[{]/.test(body)) {
    try {
      JSON.parse(body);
      return 'application/json';
    } catch {
      // not JSON after all
    }
  }
  if (/^(#{1,6}\s+\S|```|~~~)/m.test(body)) return 'text/markdown';
  const lines = body.split(/\r?\n/, 6).filter((l) => l.trim() !== '');
  if (lines.length >= 2) {
    const commas = lines.map((l) => l.split(',').length - 1);
    if (commas[0] > 0 && commas.every((c) => c === commas[0])) return 'text/csv';
  }
  return 'text/plain';
}

function starts(b: Buffer, sig: number[]): boolean {
  return b.length >= sig.length && sig.every((byte, i) => b[i] === byte);
}

function ascii(b: Buffer, at: number, text: string): boolean {
  return b.length >= at + text.length && b.toString('latin1', at, at + text.length) === text;
}
