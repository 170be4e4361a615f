import { randomBytesSeeded, u16le, u32le, zipArchive } from './bytes.util';
import type { HostileFile } from './hostile.types';
import { greyPng, VALID_JPEG } from './image.generators';
import { basePdf } from './pdf.generators';

/** What a text document that the reader refuses fails with (document-ingest.service.ts). */
export const TEXT_REASON = /^the file (is not UTF-8 or UTF-16 text|holds no text)/;

const text = (
  category: HostileFile['category'],
  variant: string,
  ext: string,
  bytes: Buffer | string,
  expect: HostileFile['expect'],
  note: string,
  extra: Partial<HostileFile> = {},
): HostileFile => ({
  name: `${category}/${variant}`,
  category,
  filename: `${variant}.${ext}`,
  bytes: typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes,
  expect,
  ...(expect !== 'rejected' && { kind: 'document' as const }),
  ...(expect === 'failed' && { reason: TEXT_REASON }),
  ...(expect === 'rejected' && { code: 'unsupported_type' as const }),
  note,
  ...extra,
});

const VIETNAMESE = 'Tiếng Việt có dấu: Hà Nội, Đà Nẵng, Huế — người ướt, phở bò, quyển sách mỏng.';

/** Every text-like and binary non-media file of the corpus, and the wrong names. */
export function hostileTexts(seed: number, maxUploadBytes: number): HostileFile[] {
  const files: HostileFile[] = [
    text(
      'control',
      'valid-markdown',
      'md',
      `# Title\n\nSome text.\n\n## Part two\n\n${VIETNAMESE}\n`,
      'finished',
      'valid markdown',
    ),
    text('control', 'valid-csv', 'csv', 'a,b,c\n1,2,3\n4,5,6\n', 'finished', 'valid CSV'),
    text(
      'control',
      'valid-json',
      'json',
      JSON.stringify({ hello: 'world', list: [1, 2, 3] }),
      'finished',
      'valid JSON',
    ),
  ];

  const refused = (variant: string, ext: string, bytes: Buffer | string, note: string) =>
    text('text-empty-nul', variant, ext, bytes, 'rejected', note);
  files.push(
    refused('empty', 'txt', Buffer.alloc(0), 'zero bytes'),
    refused('nul-single', 'txt', Buffer.from('hello\x00world', 'latin1'), 'one NUL byte in text'),
    refused('nul-only-4k', 'txt', Buffer.alloc(4096), '4 KB of NUL bytes'),
    refused(
      'nul-after-1mb',
      'txt',
      Buffer.concat([Buffer.alloc(1024 * 1024, 0x61), Buffer.from([0])]),
      'a NUL after a megabyte of text',
    ),
    text(
      'control',
      'utf16le-bom',
      'txt',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('UTF-16 text', 'utf16le')]),
      'finished',
      'UTF-16LE with a byte order mark: decoded',
    ),
    text(
      'control',
      'utf16be-bom',
      'txt',
      Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('UTF-16 text', 'utf16le').swap16()]),
      'finished',
      'UTF-16BE with a byte order mark: decoded',
    ),
    refused(
      'utf32le',
      'txt',
      Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), Buffer.from([0x41, 0, 0, 0])]),
      'UTF-32LE: read as UTF-16 it holds U+0000',
    ),
  );

  // Neither UTF-8 nor UTF-16 with a byte order mark: refused at upload (415), never read and failed.
  const invalid = (variant: string, bytes: Buffer, note: string) =>
    text('text-invalid-utf8', variant, 'txt', bytes, 'rejected', note);
  const around = (...bytes: number[]) =>
    Buffer.concat([Buffer.from('before '), Buffer.from(bytes), Buffer.from(' after')]);
  files.push(
    invalid('lone-continuation', around(0x80), 'a lone continuation byte'),
    invalid('overlong-slash', around(0xc0, 0xaf), 'an overlong "/"'),
    invalid(
      'overlong-nul',
      around(0xc0, 0x80),
      "an overlong NUL (Java's modified UTF-8): no NUL byte, still not UTF-8",
    ),
    invalid('encoded-surrogate', around(0xed, 0xa0, 0x80), 'a UTF-16 surrogate encoded as UTF-8 (CESU-8)'),
    invalid('five-byte-sequence', around(0xf8, 0x88, 0x80, 0x80, 0x80), 'a five-byte sequence'),
    invalid('beyond-u10ffff', around(0xf4, 0x90, 0x80, 0x80), 'a code point above U+10FFFF'),
    invalid(
      'truncated-at-end',
      Buffer.concat([Buffer.from('ends in the middle of a character '), Buffer.from([0xe2, 0x82])]),
      'a sequence cut at the end of the file',
    ),
    invalid('fe-ff-bytes', around(0xfe, 0xff), 'bytes that never occur in UTF-8'),
    invalid('latin1', Buffer.from('café, naïve, Ærø', 'latin1'), 'Latin-1 text'),
    invalid(
      'cp1252-quotes',
      Buffer.from([0x93, 0x71, 0x75, 0x6f, 0x74, 0x65, 0x64, 0x94]),
      'Windows-1252 curly quotes',
    ),
    invalid(
      'random-binary-no-nul',
      Buffer.from(randomBytesSeeded(8192, seed + 60).map((b) => b || 1)),
      '8 KB of random bytes without a NUL',
    ),
    text(
      'text-empty-nul',
      'bom-only',
      'txt',
      Buffer.from([0xef, 0xbb, 0xbf]),
      'failed',
      'a UTF-8 byte order mark and nothing else',
      { reason: /holds no text/ },
    ),
    text('text-empty-nul', 'whitespace-only', 'txt', ' \t\n'.repeat(1000), 'settled', 'blanks only'),
  );

  const huge = (
    variant: string,
    ext: string,
    bytes: Buffer | string,
    expect: HostileFile['expect'],
    note: string,
  ) => text('text-huge', variant, ext, bytes, expect, note);
  files.push(
    huge(
      'line-2mb-no-blanks',
      'txt',
      'x'.repeat(2 * 1024 * 1024),
      'finished',
      'one 2 MB line without a blank',
    ),
    huge(
      'line-2mb-of-blanks-markdown',
      'md',
      `# a${' '.repeat(2 * 1024 * 1024)}b\n`,
      'finished',
      'a markdown heading line of 2 MB of blanks (a quadratic regex held the worker for hours)',
    ),
    huge(
      'heading-lines-of-blanks',
      'md',
      `# Start\n${`#${' '.repeat(1000)}\n`.repeat(5000)}`,
      'finished',
      '5,000 heading lines of 1,000 blanks',
    ),
    huge('million-newlines', 'txt', '\n'.repeat(1_000_000), 'settled', 'a million line breaks'),
    huge(
      'json-deep-100k',
      'json',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      'finished',
      'JSON arrays nested 100,000 deep',
    ),
    huge('json-unbalanced-1m', 'json', '['.repeat(1_000_000), 'finished', 'a million opening brackets'),
    huge(
      'csv-100k-columns',
      'csv',
      `${Array.from({ length: 100_000 }, (_, i) => `c${i}`).join(',')}\n${Array(100_000).fill('1').join(',')}\n`,
      'finished',
      'a CSV of 100,000 columns',
    ),
    huge(
      'markdown-100k-headings',
      'md',
      Array.from({ length: 100_000 }, (_, i) => `# Heading ${i}`).join('\n'),
      'finished',
      '100,000 headings',
    ),
    huge(
      'markdown-nested-quotes',
      'md',
      `${'> '.repeat(200_000)}deep\n`,
      'finished',
      'a quote nested 200,000 deep',
    ),
    huge(
      'too-large',
      'txt',
      Buffer.alloc(maxUploadBytes + 1, 0x61),
      'rejected',
      'one byte over the upload cap',
    ),
  );
  files[files.length - 1].code = 'too_large';

  const uni = (variant: string, value: string, note: string) =>
    text('text-unicode', variant, 'txt', value, 'finished', note);
  const zalgoMarks = ['\u0301', '\u0316', '\u0323', '\u0358'];
  files.push(
    uni(
      'zalgo-200k-marks',
      `Z${Array.from({ length: 200_000 }, (_, i) => zalgoMarks[i % 4]).join('')}algo\n`,
      'one letter under 200,000 combining marks (normalising it took minutes)',
    ),
    uni(
      'rtl-override',
      `invoice \u202Efdp.exe\u202C and \u2067isolated\u2069 ${'\u200F'.repeat(1000)}`,
      'right-to-left overrides, isolates and marks',
    ),
    uni(
      'zero-width-joiners',
      '👩\u200D👩\u200D👧\u200D👦 '.repeat(20_000),
      'emoji joined by zero-width joiners, 20,000 times',
    ),
    uni(
      'vietnamese-nfd',
      VIETNAMESE.normalize('NFD').repeat(500),
      'Vietnamese with tone marks, decomposed (NFD)',
    ),
    uni(
      'vietnamese-nfc',
      VIETNAMESE.normalize('NFC').repeat(500),
      'Vietnamese with tone marks, composed (NFC)',
    ),
    uni('astral-only', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢🙂'.repeat(50_000), 'characters outside the BMP only'),
    uni(
      'noncharacters',
      'a\uFFFEb\uFFFFc\uFDD0d\u{1FFFE}e\u{10FFFF}f'.repeat(1000),
      'noncharacters and U+10FFFF',
    ),
    uni(
      'line-separators',
      'one\u2028two\u2029three\u0085four\rfive'.repeat(1000),
      'U+2028, U+2029, NEL and lone CR as line ends',
    ),
    uni(
      'controls-and-escapes',
      '\x1b[31mred\x1b[0m \x07\x08\x0b\x0c\u0080\u009f'.repeat(1000),
      'ANSI escapes and C0/C1 controls (no NUL)',
    ),
  );

  const named = (
    variant: string,
    filename: string,
    bytes: Buffer,
    expect: HostileFile['expect'],
    kind: HostileFile['kind'],
    note: string,
  ) => ({
    ...text('wrong-name', variant, 'x', bytes, expect, note),
    filename,
    kind,
  });
  files.push(
    named('png-named-pdf', 'report.pdf', greyPng(8, 8), 'finished', 'picture', 'a PNG named .pdf'),
    named('pdf-named-jpg', 'photo.jpg', basePdf(), 'finished', 'document', 'a PDF named .jpg'),
    named('jpeg-named-txt', 'notes.txt', VALID_JPEG, 'finished', 'picture', 'a JPEG named .txt'),
    named(
      'html-named-png',
      'photo.png',
      Buffer.from(
        '<!doctype html><html><body><script>alert(1)</script><img src=x onerror=alert(2)></body></html>',
      ),
      'finished',
      'document',
      'HTML with scripts named .png: read as text, never as a picture',
    ),
    named(
      'svg-named-png',
      'logo.png',
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script><text>hi</text></svg>',
      ),
      'finished',
      'document',
      'SVG with scripts named .png',
    ),
    named(
      'text-named-exe',
      'setup.exe',
      Buffer.from('just words\n'),
      'finished',
      'document',
      'text named .exe',
    ),
    named(
      'path-traversal',
      '../../../etc/passwd',
      Buffer.from('root:x:0:0\n'),
      'finished',
      'document',
      'a name climbing out of any folder',
    ),
    named(
      'name-10k-chars',
      `${'n'.repeat(10_000)}.txt`,
      Buffer.from('long name\n'),
      'finished',
      'document',
      'a 10,000-character name',
    ),
    named(
      'name-rtl-override',
      'invoice\u202Efdp.exe',
      Buffer.from('rtl name\n'),
      'finished',
      'document',
      'a name with a right-to-left override',
    ),
    named(
      'name-unicode',
      'Báo cáo quý 3 — 👩‍👩‍👧.md',
      Buffer.from('# Báo cáo\n'),
      'finished',
      'document',
      'a Vietnamese name with an emoji sequence',
    ),
    named('name-empty', '', Buffer.from('no name\n'), 'finished', 'document', 'no name at all'),
  );

  const binary = (variant: string, ext: string, bytes: Buffer, note: string) =>
    text('binary', variant, ext, bytes, 'rejected', note);
  files.push(
    binary('zip', 'zip', zipArchive([{ name: 'a.txt', data: Buffer.from('inside a zip') }]), 'a ZIP archive'),
    binary(
      'zip-then-pdf',
      'pdf',
      Buffer.concat([zipArchive([{ name: 'x', data: Buffer.from('x') }]), basePdf()]),
      'a ZIP with a PDF after it (the PDF magic is not at the start)',
    ),
    binary(
      'docx-like',
      'docx',
      zipArchive([
        { name: '[Content_Types].xml', data: Buffer.from('<Types/>') },
        { name: 'word/document.xml', data: Buffer.from('<w:document/>') },
      ]),
      'an Office document',
    ),
    binary('gzip', 'gz', Buffer.from('1f8b0800000000000003cb48cdc9c9e70200', 'hex'), 'gzip'),
    binary(
      'elf',
      'png',
      Buffer.concat([
        Buffer.from('7f454c46020101000000000000000000', 'hex'),
        randomBytesSeeded(240, seed + 70),
      ]),
      'an ELF executable named .png',
    ),
    binary(
      'bmp',
      'bmp',
      Buffer.concat([
        Buffer.from('BM'),
        u32le(70),
        u32le(0),
        u32le(54),
        u32le(40),
        u32le(2),
        u32le(2),
        u16le(1),
        u16le(24),
        u32le(0),
        u32le(16),
        Buffer.alloc(16 + 16),
      ]),
      'a BMP (not a supported picture)',
    ),
    binary(
      'tiff',
      'tif',
      Buffer.concat([Buffer.from('II*\x00', 'latin1'), u32le(8), u16le(0), u32le(0)]),
      'a TIFF (not a supported picture)',
    ),
    binary(
      'heic-like',
      'heic',
      Buffer.concat([u32le(0x18000000), Buffer.from('ftypheic', 'latin1'), Buffer.alloc(12)]),
      'an HEIC header',
    ),
  );
  return files;
}
