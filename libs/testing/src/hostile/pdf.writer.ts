import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

/** A PDF object's body (what goes between `n 0 obj` and `endobj`), as text or bytes. */
export type PdfBody = string | Buffer;

export interface PdfParts {
  /** Bodies of objects 1..n, in order (object i + 1 is `objects[i]`). */
  objects: PdfBody[];
  /** Default `%PDF-1.7` and a binary comment line. */
  header?: string;
  /** Default 1. */
  root?: number;
  /** Extra trailer entries, e.g. `/Encrypt 9 0 R /ID [<...> <...>]`. */
  trailer?: string;
  /** `table` (default), `stream` (a cross-reference stream, PDF 1.5) or `none`. */
  xref?: 'table' | 'stream' | 'none';
  /** With `xref: 'stream'`: objects stored inside an object stream, as [object number, stream number, index]. */
  compressed?: [number, number, number][];
  /** Override of the `startxref` value (a lie, for malformed files). */
  startxref?: number;
}

/** Escapes a PDF literal string's content. */
export function pdfString(text: string): string {
  return `(${text.replace(/[\\()]/g, (c) => `\\${c}`)})`;
}

/** A stream object's body: `<< dict /Length n >> stream … endstream`, deflated when asked. */
export function pdfStream(
  dict: string,
  data: PdfBody,
  options: { flate?: boolean; length?: string } = {},
): Buffer {
  const raw = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const bytes = options.flate ? deflateSync(raw, { level: 9 }) : raw;
  const filter = options.flate ? ' /Filter /FlateDecode' : '';
  const length = options.length ?? String(bytes.length);
  return Buffer.concat([
    Buffer.from(`<< ${dict} /Length ${length}${filter} >>\nstream\n`, 'latin1'),
    bytes,
    Buffer.from('\nendstream', 'latin1'),
  ]);
}

const DEFAULT_HEADER = '%PDF-1.7\n%\xe2\xe3\xcf\xd3\n';

/** Writes a whole PDF file with exact offsets, so that anything wrong in it is wrong on purpose. */
export function buildPdf(parts: PdfParts): Buffer {
  const chunks: Buffer[] = [Buffer.from(parts.header ?? DEFAULT_HEADER, 'latin1')];
  let size = chunks[0].length;
  const offsets: number[] = [];
  const inStream = new Set((parts.compressed ?? []).map(([n]) => n));
  parts.objects.forEach((body, i) => {
    const n = i + 1;
    if (inStream.has(n)) {
      offsets.push(-1);
      return;
    }
    offsets.push(size);
    const chunk = Buffer.concat([
      Buffer.from(`${n} 0 obj\n`, 'latin1'),
      typeof body === 'string' ? Buffer.from(body, 'latin1') : body,
      Buffer.from('\nendobj\n', 'latin1'),
    ]);
    chunks.push(chunk);
    size += chunk.length;
  });
  const root = parts.root ?? 1;
  const count = parts.objects.length + 1;
  const xref = parts.xref ?? 'table';
  let startxref = size;
  if (xref === 'table') {
    const lines = ['xref', `0 ${count}`, '0000000000 65535 f '];
    for (const offset of offsets) {
      lines.push(offset < 0 ? '0000000000 65535 f ' : `${String(offset).padStart(10, '0')} 00000 n `);
    }
    chunks.push(
      Buffer.from(
        `${lines.join('\n')}\ntrailer\n<< /Size ${count} /Root ${root} 0 R ${parts.trailer ?? ''}>>\n`,
        'latin1',
      ),
    );
  } else if (xref === 'stream') {
    // Entry widths [1 4 2]: type, offset (or object stream number), generation (or index).
    const n = count; // the xref stream is the next object
    const rows: Buffer[] = [row(0, 0, 0xffff)];
    const packedAt = new Map((parts.compressed ?? []).map((entry) => [entry[0], entry]));
    offsets.forEach((offset, i) => {
      const packed = packedAt.get(i + 1);
      rows.push(packed ? row(2, packed[1], packed[2]) : row(1, offset, 0));
    });
    rows.push(row(1, size, 0));
    const body = pdfStream(
      `/Type /XRef /Size ${n + 1} /W [1 4 2] /Root ${root} 0 R ${parts.trailer ?? ''}`,
      Buffer.concat(rows),
      { flate: true },
    );
    chunks.push(
      Buffer.concat([Buffer.from(`${n} 0 obj\n`, 'latin1'), body, Buffer.from('\nendobj\n', 'latin1')]),
    );
  } else {
    startxref = -1;
  }
  if (startxref >= 0 || parts.startxref !== undefined) {
    chunks.push(Buffer.from(`startxref\n${parts.startxref ?? startxref}\n`, 'latin1'));
  }
  chunks.push(Buffer.from('%%EOF\n', 'latin1'));
  return Buffer.concat(chunks);
}

function row(type: number, field2: number, field3: number): Buffer {
  const b = Buffer.alloc(7);
  b.writeUInt8(type, 0);
  b.writeUInt32BE(field2 >>> 0, 1);
  b.writeUInt16BE(field3 & 0xffff, 5);
  return b;
}

/**
 * A page's content stream showing `lines` of text in Helvetica, 50 lines a column: a reader drops
 * text that falls off the page, so a long page starts again at the top.
 */
export function textContent(lines: string[]): string {
  const shown = lines.map((l, i) => `1 0 0 1 72 ${740 - (i % 50) * 14} Tm ${pdfString(l)} Tj`);
  return ['BT', '/F1 12 Tf', ...shown, 'ET'].join('\n');
}

export interface SimplePdfOptions {
  /** Outline (bookmark) titles, one level. */
  outline?: string[];
  /** Extra catalog entries. */
  catalogExtra?: string;
  /** Extra page dictionary entries (every page). */
  pageExtra?: string;
  /** Extra objects appended after the standard ones (numbered from the first free number). */
  extraObjects?: PdfBody[];
  /** Compress the content streams. */
  flate?: boolean;
  trailer?: string;
  header?: string;
}

/**
 * A well-formed PDF: catalog (1), page tree (2), Helvetica (3), then per page its page object and
 * content stream, then the outline and any extra objects. Returns the bytes and the first free
 * object number, so callers can add objects that refer to each other.
 */
export function simplePdf(pages: string[][], options: SimplePdfOptions = {}): Buffer {
  const objects: PdfBody[] = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  const outlineId = 4 + pages.length * 2;
  const hasOutline = (options.outline ?? []).length > 0;
  objects.push(
    `<< /Type /Catalog /Pages 2 0 R${hasOutline ? ` /Outlines ${outlineId} 0 R` : ''} ${options.catalogExtra ?? ''}>>`,
  );
  objects.push(
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`,
  );
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  pages.forEach((lines, i) => {
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i] + 1} 0 R ${options.pageExtra ?? ''}>>`,
    );
    objects.push(pdfStream('', textContent(lines), { flate: options.flate }));
  });
  if (hasOutline) {
    const titles = options.outline ?? [];
    const first = outlineId + 1;
    const last = outlineId + titles.length;
    objects.push(`<< /Type /Outlines /First ${first} 0 R /Last ${last} 0 R /Count ${titles.length} >>`);
    titles.forEach((title, i) => {
      const id = first + i;
      const prev = i > 0 ? ` /Prev ${id - 1} 0 R` : '';
      const next = i < titles.length - 1 ? ` /Next ${id + 1} 0 R` : '';
      objects.push(
        `<< /Title ${pdfString(title)} /Parent ${outlineId} 0 R${prev}${next} /Dest [${pageIds[Math.min(i, pageIds.length - 1)]} 0 R /Fit] >>`,
      );
    });
  }
  objects.push(...(options.extraObjects ?? []));
  return buildPdf({ objects, trailer: options.trailer, header: options.header });
}

/** The object number `simplePdf` gives the first of `extraObjects`. */
export function firstExtraObject(pageCount: number, outlineCount = 0): number {
  return 4 + pageCount * 2 + (outlineCount ? outlineCount + 1 : 0);
}

// --- Encryption (the standard security handler, enough for a reader to recognise it) -------------

const PASSWORD_PAD = Buffer.from('28bf4e5e4e758a4164004e56fffa01082e2e00b6d0683e802f0ca9fe6453697a', 'hex');

/**
 * The /O and /U entries of the standard security handler, revision 2 (PDF 1.7, algorithms 3.2–3.4),
 * with the user password `userPassword` and an owner password of its own. Only the entries are
 * real: the test files' strings and streams stay in the clear, which no reader gets to see, as
 * the ingest refuses every encrypted PDF.
 */
export function rc4Security(fileId: Buffer, userPassword: string): { o: Buffer; u: Buffer } {
  const pad = (password: string) =>
    Buffer.concat([Buffer.from(password, 'latin1'), PASSWORD_PAD]).subarray(0, 32);
  const ownerKey = md5(pad('owner')).subarray(0, 5);
  const o = rc4(ownerKey, pad(userPassword));
  const p = Buffer.alloc(4);
  p.writeInt32LE(-4);
  const key = md5(pad(userPassword), o, p, fileId).subarray(0, 5);
  return { o, u: rc4(key, PASSWORD_PAD) };
}

function rc4(key: Buffer, data: Buffer): Buffer {
  const s = Array.from({ length: 256 }, (_, i) => i);
  for (let i = 0, j = 0; i < 256; i++) {
    j = (j + s[i] + key[i % key.length]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
  }
  const out = Buffer.alloc(data.length);
  for (let n = 0, i = 0, j = 0; n < data.length; n++) {
    i = (i + 1) & 0xff;
    j = (j + s[i]) & 0xff;
    [s[i], s[j]] = [s[j], s[i]];
    out[n] = data[n] ^ s[(s[i] + s[j]) & 0xff];
  }
  return out;
}

const md5 = (...parts: Buffer[]) => createHash('md5').update(Buffer.concat(parts)).digest();
