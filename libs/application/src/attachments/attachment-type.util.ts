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

const UNSUPPORTED =
  'Unsupported file type: pictures may be PNG, JPEG, WebP or GIF; documents PDF, plain text, markdown, CSV or JSON';
const UNSUPPORTED_ENCODING =
  'Unsupported text encoding: text documents must be UTF-8, or UTF-16 with a byte order mark; save the file as UTF-8';

const UTF16_BOMS: ReadonlyArray<[encoding: 'utf-16le' | 'utf-16be', bom: number[]]> = [
  ['utf-16le', [0xff, 0xfe]],
  ['utf-16be', [0xfe, 0xff]],
];

/**
 * A text file's text: strict UTF-8 (a byte order mark dropped), or strict UTF-16 when a byte order
 * mark says so. Null for anything else: a legacy 8-bit encoding cannot be told apart reliably (a
 * wrong guess garbles the text without a word), so such a file is refused at upload.
 */
export function decodeText(bytes: Uint8Array): string | null {
  const bom = UTF16_BOMS.find(([, sig]) => sig.every((byte, i) => bytes[i] === byte));
  try {
    return new TextDecoder(bom?.[0] ?? 'utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * Pictures (PNG, JPEG, WebP, GIF) and PDFs by their magic numbers; anything else is text when it
 * decodes (decodeText) and holds no U+0000 (binary formats nearly always do), told apart by
 * content: JSON when it parses as an object or array, CSV when its first lines hold the same
 * number of commas, markdown when it has markdown headings or fences, else plain text.
 */
export function detectAttachmentType(bytes: Buffer): AttachmentType {
  if (bytes.length === 0) return { ok: false, reason: 'The file is empty' };
  const magic = MAGIC.find((m) => m.test(bytes));
  if (magic) return { ok: true, kind: magic.kind, mimeType: magic.mimeType };
  const text = decodeText(bytes);
  if (text === null) return { ok: false, reason: bytes.includes(0) ? UNSUPPORTED : UNSUPPORTED_ENCODING };
  if (text.includes('\u0000')) return { ok: false, reason: UNSUPPORTED };
  return { ok: true, kind: 'document', mimeType: textSubtype(text) };
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
