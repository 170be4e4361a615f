import { createHash } from 'node:crypto';
import { deflateRepeated, flipBytes, randomBytesSeeded, zipArchive } from './bytes.util';
import type { HostileFile } from './hostile.types';
import {
  buildPdf,
  firstExtraObject,
  pdfStream,
  pdfString,
  rc4Security,
  simplePdf,
  textContent,
  type PdfBody,
} from './pdf.writer';

/** What a PDF that the reader refuses fails with (apps/attachment-ingest media/reader-thread.ts and pdf-document.ts). */
export const PDF_REASON =
  /^(not a valid PDF|the PDF (cannot be opened|is encrypted|has no pages|has \d+ pages|needs more than|reader (failed|stopped))|reading the PDF took longer)/;

const LOREM = [
  'Quarterly report of the hostile corpus.',
  'Revenue grew in the third quarter; costs did not.',
  'This line is here so that every page holds text.',
];

/** A valid five-page PDF with an outline: the base that truncation and byte flips damage. */
export function basePdf(): Buffer {
  const pages = Array.from({ length: 5 }, (_, i) => [`Chapter ${i + 1}`, ...LOREM]);
  return simplePdf(pages, { outline: pages.map((p) => p[0]), flate: true });
}

const pdf = (
  category: HostileFile['category'],
  variant: string,
  bytes: Buffer,
  expect: HostileFile['expect'],
  note: string,
  extra: Partial<HostileFile> = {},
): HostileFile => ({
  name: `${category}/${variant}`,
  category,
  filename: `${variant}.pdf`,
  bytes,
  expect,
  kind: 'document',
  ...(expect === 'failed' && { reason: PDF_REASON }),
  note,
  ...extra,
});

// --- Encryption -------------------------------------------------------------------------------

/**
 * RC4 40-bit (V1 R2) with an empty user password: a reader opens it without asking, which is why
 * the ingest must look at the encryption dictionary itself.
 */
function rc4EmptyPasswordPdf(): Buffer {
  const id = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
  const { o, u } = rc4Security(id, '');
  const pages = [['Secret page one.'], ['Secret page two.']];
  const encryptId = firstExtraObject(pages.length);
  return simplePdf(pages, {
    extraObjects: [
      `<< /Filter /Standard /V 1 /R 2 /O <${o.toString('hex')}> /U <${u.toString('hex')}> /P -4 >>`,
    ],
    trailer: `/Encrypt ${encryptId} 0 R /ID [<${id.toString('hex')}> <${id.toString('hex')}>] `,
  });
}

function encryptedPdf(dict: string, seed: number): Buffer {
  const rnd = (n: number) => randomBytesSeeded(n, seed + n).toString('hex');
  const id = rnd(16);
  const pages = [['Locked page.']];
  return simplePdf(pages, {
    extraObjects: [dict.replace('$O', `<${rnd(32)}>`).replace('$U', `<${rnd(32)}>`)],
    trailer: `/Encrypt ${firstExtraObject(pages.length)} 0 R /ID [<${id}> <${id}>] `,
  });
}

// --- Script payloads that must never run ------------------------------------------------------------

/** JavaScript that leaves `markerPath` behind (and a global) if anything ever evaluates it. */
export function payloadScript(markerPath: string): string {
  return `globalThis.__hostilePdfPayloadRan = true; process.getBuiltinModule('fs').writeFileSync(${JSON.stringify(markerPath)}, 'payload ran')`;
}

/** A FontMatrix entry that breaks out of the code a vulnerable pdf.js (CVE-2024-4367) generates. */
function maliciousFontMatrix(markerPath: string): string {
  return `[0.1 0 0 0.1 0 ${pdfString(`1); ${payloadScript(markerPath)}; //`)}]`;
}

/**
 * The CVE-2024-4367 shape: a Type1 font whose /FontMatrix carries a string of JavaScript, an empty
 * embedded font program, and text drawn with it (so the font is loaded to extract the text).
 */
export function fontMatrixExploitPdf(markerPath: string): Buffer {
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    pdfStream('', 'BT /F1 24 Tf 72 700 Td (AbCdEf Hostile font) Tj ET'),
    `<< /Type /Font /Subtype /Type1 /BaseFont /HOSTIL+Evil-Bold /FirstChar 65 /LastChar 102 /Widths [${Array(38).fill(500).join(' ')}] /Encoding /WinAnsiEncoding /FontMatrix ${maliciousFontMatrix(markerPath)} /FontDescriptor 6 0 R >>`,
    '<< /Type /FontDescriptor /FontName /HOSTIL+Evil-Bold /Flags 32 /FontBBox [0 0 1000 1000] /ItalicAngle 0 /Ascent 750 /Descent -250 /CapHeight 700 /StemV 100 /FontFile3 7 0 R >>',
    pdfStream('/Subtype /Type1C', ''),
  ];
  return buildPdf({ objects });
}

/** The same payload in a Type3 font, whose FontMatrix a reader takes from the dictionary as it is. */
export function type3FontMatrixExploitPdf(markerPath: string): Buffer {
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /T3 5 0 R >> >> /Contents 4 0 R >>',
    pdfStream('', 'BT /T3 24 Tf 72 700 Td (aaa) Tj ET'),
    `<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix ${maliciousFontMatrix(markerPath)} /CharProcs << /a 6 0 R >> /Encoding << /Type /Encoding /Differences [97 /a] >> /FirstChar 97 /LastChar 97 /Widths [1000] /Resources << >> >>`,
    pdfStream('', '1000 0 0 0 750 750 d1 0 0 750 750 re f'),
  ];
  return buildPdf({ objects });
}

/** An OpenAction and a page action running JavaScript: a text reader must never run either. */
function javascriptActionPdf(markerPath: string): Buffer {
  const js = pdfString(payloadScript(markerPath));
  return simplePdf([['A document with scripts.']], {
    catalogExtra: `/OpenAction << /S /JavaScript /JS ${js} >> /Names << /JavaScript << /Names [(boot) << /S /JavaScript /JS ${js} >>] >> >>`,
    pageExtra: `/AA << /O << /S /JavaScript /JS ${js} >> >>`,
  });
}

/** An XFA form with a script (XFA is turned off in the reader). */
function xfaPdf(markerPath: string): Buffer {
  const xdp = `<?xml version="1.0"?><xdp:xdp xmlns:xdp="http://ns.adobe.com/xdp/"><template><subform><event activity="initialize"><script contentType="application/x-javascript">${payloadScript(markerPath)}</script></event></subform></template></xdp:xdp>`;
  const pages = [['An XFA form.']];
  const xfaId = firstExtraObject(pages.length);
  return simplePdf(pages, {
    catalogExtra: `/AcroForm << /Fields [] /XFA ${xfaId} 0 R >> /NeedsRendering true`,
    extraObjects: [pdfStream('', xdp)],
  });
}

/** A PostScript calculator function (the reader's only `eval` use when eval is allowed). */
function postscriptFunctionPdf(): Buffer {
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 6 0 R >> /Shading << /Sh1 << /ShadingType 2 /ColorSpace /DeviceRGB /Coords [0 0 600 0] /Function 5 0 R >> >> >> /Contents 4 0 R >>',
    pdfStream('', '/Sh1 sh BT /F1 12 Tf 72 700 Td (Shaded page.) Tj ET'),
    pdfStream(
      '/FunctionType 4 /Domain [0 1] /Range [0 1 0 1 0 1]',
      `{ ${'dup '.repeat(2000)}${'pop '.repeat(2000)} dup 0.5 mul exch 1 exch sub }`,
    ),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  return buildPdf({ objects });
}

// --- Bombs ------------------------------------------------------------------------------------------

/** A page whose content stream inflates to `megabytes` MB of blanks: about 1 kB a megabyte on the wire. */
export function flateBombPdf(megabytes: number): Buffer {
  const z = deflateRepeated(Buffer.alloc(1024 * 1024, 0x20), megabytes);
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents [6 0 R 4 0 R] >>',
    Buffer.concat([
      Buffer.from(`<< /Length ${z.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
      z,
      Buffer.from('\nendstream', 'latin1'),
    ]),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    pdfStream('', textContent(['Before the blanks.'])),
  ];
  return buildPdf({ objects });
}

/** A page whose text is `words` distinct words: more text on one page than a search index holds. */
function hugePageTextPdf(words: number): Buffer {
  const lines: string[] = [];
  for (let i = 0; i < words; i += 12) {
    lines.push(
      Array.from({ length: 12 }, (_, k) =>
        createHash('sha1')
          .update(String(i + k))
          .digest('hex')
          .slice(0, 10),
      ).join(' '),
    );
  }
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    pdfStream('', textContent(lines), { flate: true }),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  return buildPdf({ objects });
}

/** One page showing the same short string 32,768 × `blocks` times: hundreds of MB of text. */
function textExplosionPdf(blocks: number): Buffer {
  const shows = Buffer.from('(HOSTILE TEXT REPEATED ) Tj\n'.repeat(32_768), 'latin1');
  const z = deflateRepeated(shows, blocks);
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents [6 0 R 4 0 R 7 0 R] >>',
    Buffer.concat([
      Buffer.from(`<< /Length ${z.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
      z,
      Buffer.from('\nendstream', 'latin1'),
    ]),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    pdfStream('', 'BT /F1 12 Tf 72 700 Td'),
    pdfStream('', 'ET'),
  ];
  return buildPdf({ objects });
}

/** `[[[[…]]]]` (or `<< /A << /A …`) nested `depth` deep, inline in the catalog or the page. */
function deepNestingPdf(
  depth: number,
  where: 'catalog' | 'page' | 'content',
  shape: 'array' | 'dict',
): Buffer {
  const open = shape === 'array' ? '[' : '<< /A ';
  const close = shape === 'array' ? ']' : ' >>';
  const nested = `${open.repeat(depth)}0${close.repeat(depth)}`;
  if (where === 'content') {
    return buildPdf({
      objects: [
        '<< /Type /Catalog /Pages 2 0 R >>',
        '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
        pdfStream(
          '',
          `BT /F1 12 Tf 72 700 Td (Nested) Tj ${'['.repeat(depth)}(x)${']'.repeat(depth)} TJ ET`,
          {
            flate: true,
          },
        ),
        '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
      ],
    });
  }
  return simplePdf([['Deeply nested objects.']], {
    ...(where === 'catalog' ? { catalogExtra: `/Deep ${nested}` } : { pageExtra: `/Annots ${nested}` }),
  });
}

/** `q` saved `depth` times before the text, restored after: the graphics state stack. */
function deepStatePdf(depth: number): Buffer {
  return buildPdf({
    objects: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
      pdfStream('', `${'q '.repeat(depth)}BT /F1 12 Tf 72 700 Td (Deep state) Tj ET ${'Q '.repeat(depth)}`, {
        flate: true,
      }),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ],
  });
}

/** A page tree whose /Count claims `count` pages over one real page, listed `kids` times. */
function claimedPagesPdf(count: string, kids = 1): Buffer {
  return buildPdf({
    objects: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      `<< /Type /Pages /Kids [${'3 0 R '.repeat(kids)}] /Count ${count} >>`,
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
      pdfStream('', textContent(['The only real page.'])),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ],
  });
}

/** Page trees that loop back on themselves. */
function pageTreeLoopPdf(shape: 'self' | 'pair' | 'catalog' | 'parent'): Buffer {
  const font = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  const content = pdfStream('', textContent(['A page in a loop.']));
  const page =
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>';
  const trees: Record<typeof shape, PdfBody[]> = {
    self: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>',
      page,
      content,
      font,
    ],
    pair: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [6 0 R] /Count 3 >>',
      page,
      content,
      font,
      '<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 3 0 R] /Count 2 >>',
    ],
    catalog: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [1 0 R 3 0 R] /Count 2 >>',
      page,
      content,
      font,
    ],
    // No resources on the page: looking them up walks the /Parent chain, which loops.
    parent: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 /Parent 6 0 R >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>',
      content,
      font,
      '<< /Type /Pages /Kids [2 0 R] /Count 1 /Parent 2 0 R >>',
    ],
  };
  return buildPdf({ objects: trees[shape] });
}

/** Object streams: one claiming a million objects, one really holding `real` objects. */
function objectStreamPdf(claimed: number, real: number): Buffer {
  // Objects 1-5 are plain; 6 is the object stream holding objects 7..(6 + real).
  const members = Array.from({ length: real }, (_, i) => 7 + i);
  const bodies = members.map((n) => `<< /N ${n} >>`);
  let offset = 0;
  const header: string[] = [];
  for (let i = 0; i < members.length; i++) {
    header.push(`${members[i]} ${offset}`);
    offset += bodies[i].length + 1;
  }
  const headerText = header.join(' ') + '\n';
  const data = headerText + bodies.join(' ');
  const objects: PdfBody[] = [
    '<< /Type /Catalog /Pages 2 0 R /Extra 7 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    pdfStream('', textContent(['A page beside a large object stream.'])),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    pdfStream(`/Type /ObjStm /N ${claimed} /First ${headerText.length}`, data, { flate: true }),
    ...bodies,
  ];
  return buildPdf({
    objects,
    xref: 'stream',
    compressed: members.map((n, i) => [n, 6, i] as [number, number, number]),
  });
}

/** An outline whose items point back at themselves, and one nested `depth` deep. */
function outlinePdf(shape: 'loop' | 'deep', depth = 5000): Buffer {
  const pages = [['Outlined document.']];
  const first = firstExtraObject(pages.length);
  if (shape === 'loop') {
    return simplePdf(pages, {
      catalogExtra: `/Outlines ${first} 0 R`,
      extraObjects: [
        `<< /Type /Outlines /First ${first + 1} 0 R /Last ${first + 2} 0 R /Count 2 >>`,
        `<< /Title (Loop A) /Parent ${first} 0 R /Next ${first + 2} 0 R /First ${first + 1} 0 R >>`,
        `<< /Title (Loop B) /Parent ${first} 0 R /Next ${first + 1} 0 R /Prev ${first + 1} 0 R >>`,
      ],
    });
  }
  const items: string[] = [`<< /Type /Outlines /First ${first + 1} 0 R /Count 1 >>`];
  for (let i = 1; i <= depth; i++) {
    const child = i < depth ? ` /First ${first + i + 1} 0 R /Count 1` : '';
    items.push(`<< /Title (Level ${i}) /Parent ${first + i - 1} 0 R${child} >>`);
  }
  return simplePdf(pages, { catalogExtra: `/Outlines ${first} 0 R`, extraObjects: items });
}

/** A cross-reference chain whose /Prev points back at itself. */
function xrefPrevLoopPdf(): Buffer {
  const base = simplePdf([['Incremental update loop.']]).toString('latin1');
  const startxref = Number(/startxref\n(\d+)/.exec(base)?.[1]);
  return Buffer.from(base.replace('/Root 1 0 R ', `/Root 1 0 R /Prev ${startxref} `), 'latin1');
}

/** Text with NUL characters and a ToUnicode map onto lone surrogates. */
function awkwardTextPdf(kind: 'nul' | 'surrogate' | 'controls'): Buffer {
  if (kind === 'nul' || kind === 'controls') {
    const shown = kind === 'nul' ? 'A\\000B\\000\\000C' : 'A\\001\\002\\033[31m\\177\\200\\377B';
    return buildPdf({
      objects: [
        '<< /Type /Catalog /Pages 2 0 R >>',
        '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
        '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
        pdfStream('', `BT /F1 12 Tf 72 700 Td (${shown}) Tj ET`),
        '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
      ],
    });
  }
  const cmap = [
    '/CIDInit /ProcSet findresource begin 12 dict begin begincmap',
    '/CMapName /Hostile def 1 begincodespacerange <00> <FF> endcodespacerange',
    '3 beginbfchar <41> <D800> <42> <DFFF> <43> <0000> endbfchar',
    'endcmap CMapName currentdict /CMap defineresource pop end end',
  ].join('\n');
  return buildPdf({
    objects: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
      pdfStream('', 'BT /F1 12 Tf 72 700 Td (ABCABC) Tj ET'),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>',
      pdfStream('', cmap),
    ],
  });
}

/** An image XObject that claims 2^30 × 2^30 pixels (text extraction must not decode it). */
function hugeImagePdf(): Buffer {
  return buildPdf({
    objects: [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> /XObject << /Im1 6 0 R >> >> /Contents 4 0 R >>',
      pdfStream('', 'q 600 0 0 600 0 0 cm /Im1 Do Q BT /F1 12 Tf 72 700 Td (Under the image.) Tj ET'),
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
      pdfStream(
        '/Type /XObject /Subtype /Image /Width 1073741824 /Height 1073741824 /ColorSpace /DeviceRGB /BitsPerComponent 8',
        Buffer.alloc(64),
        {
          flate: true,
        },
      ),
    ],
  });
}

// --- Malformed structure ------------------------------------------------------------------------

function replaceOnce(bytes: Buffer, from: string, to: string): Buffer {
  const text = bytes.toString('latin1');
  if (!text.includes(from)) throw new Error(`hostile generator: "${from}" not found`);
  return Buffer.from(text.replace(from, to), 'latin1');
}

function malformed(): HostileFile[] {
  const plain = simplePdf([['Plain page one.'], ['Plain page two.']]);
  const startxref = Number(/startxref\n(\d+)/.exec(plain.toString('latin1'))?.[1]);
  const m = (variant: string, bytes: Buffer, expect: HostileFile['expect'], note: string) =>
    pdf('pdf-malformed', variant, bytes, expect, note);
  return [
    m('header-only', Buffer.from('%PDF-1.7\n'), 'failed', 'the header and nothing else'),
    m('header-eof', Buffer.from('%PDF-1.4\n%%EOF\n'), 'failed', 'a header and an end marker'),
    m('magic-only', Buffer.from('%PDF-'), 'failed', 'five bytes of magic'),
    ...[1, 2, 3].map((seed) =>
      m(
        `garbage-${seed}`,
        Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytesSeeded(4096, seed)]),
        'failed',
        'a PDF header over 4 KB of random bytes',
      ),
    ),
    m(
      'startxref-past-eof',
      replaceOnce(plain, `startxref\n${startxref}`, 'startxref\n99999999'),
      'settled',
      'startxref beyond the end',
    ),
    m(
      'startxref-negative',
      replaceOnce(plain, `startxref\n${startxref}`, 'startxref\n-42'),
      'settled',
      'a negative startxref',
    ),
    m(
      'xref-offsets-shifted',
      Buffer.from(
        plain
          .toString('latin1')
          .replace(/(\d{10}) 00000 n/g, (_, o) => `${String(Number(o) + 7).padStart(10, '0')} 00000 n`),
        'latin1',
      ),
      'settled',
      'every cross-reference offset off by 7',
    ),
    m(
      'no-xref-no-trailer',
      buildPdf({
        objects: [
          '<< /Type /Catalog /Pages 2 0 R >>',
          '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
          '<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
          pdfStream('', textContent(['No xref.'])),
          '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
        ],
        xref: 'none',
      }),
      'settled',
      'objects only: no cross-reference table, no trailer',
    ),
    m('root-missing', replaceOnce(plain, '/Root 1 0 R ', ''), 'settled', 'a trailer without /Root'),
    m('root-not-dict', replaceOnce(plain, '/Root 1 0 R ', '/Root 42 '), 'settled', '/Root is a number'),
    m(
      'root-dangling',
      replaceOnce(plain, '/Root 1 0 R ', '/Root 999 0 R '),
      'settled',
      '/Root names a missing object',
    ),
    m(
      'pages-dangling',
      replaceOnce(plain, '/Pages 2 0 R', '/Pages 999 0 R'),
      'settled',
      'the catalog names a missing page tree',
    ),
    m('kids-not-array', replaceOnce(plain, '/Kids [4 0 R 6 0 R]', '/Kids 4'), 'settled', '/Kids is a number'),
    m('count-negative', replaceOnce(plain, '/Count 2', '/Count -7'), 'settled', 'a negative page count'),
    m(
      'count-not-number',
      replaceOnce(plain, '/Count 2', '/Count (many)'),
      'settled',
      'a page count that is a string',
    ),
    m(
      'length-huge',
      replaceOnce(plain, '/Length ', '/Length 999999999 /Was '),
      'settled',
      'a stream /Length far past the end',
    ),
    m(
      'length-negative',
      replaceOnce(plain, '/Length ', '/Length -5 /Was '),
      'settled',
      'a negative stream /Length',
    ),
    m(
      'length-self-reference',
      replaceOnce(plain, '/Length ', '/Length 5 0 R /Was '),
      'settled',
      'a stream whose /Length is the stream itself',
    ),
    m(
      'no-endstream',
      Buffer.from(plain.toString('latin1').replace('endstream', 'endstrem'), 'latin1'),
      'settled',
      'a stream that never ends',
    ),
    m(
      'filter-unknown',
      replaceOnce(plain, '/Length ', '/Filter /HostileDecode /Length '),
      'settled',
      'a stream filter nobody knows',
    ),
    m(
      'filter-chain',
      replaceOnce(plain, '/Length ', `/Filter [${'/ASCIIHexDecode '.repeat(64)}] /Length `),
      'settled',
      '64 filters chained on plain text',
    ),
    m(
      'flate-corrupt',
      buildPdf({
        objects: [
          '<< /Type /Catalog /Pages 2 0 R >>',
          '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
          '<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
          Buffer.concat([
            Buffer.from('<< /Length 512 /Filter /FlateDecode >>\nstream\n'),
            Buffer.from([0x78, 0x9c]),
            randomBytesSeeded(510, 77),
            Buffer.from('\nendstream'),
          ]),
          '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
        ],
      }),
      'settled',
      'a deflate stream of random bytes',
    ),
    m(
      'content-garbage-operators',
      buildPdf({
        objects: [
          '<< /Type /Catalog /Pages 2 0 R >>',
          '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
          '<< /Type /Page /Parent 2 0 R /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
          pdfStream(
            '',
            `BT /F1 12 Tf ${'1 2 3 4 5 6 7 8 9 foo bar baz Tj TJ \' " Tf Td '.repeat(2000)} ET (unclosed`,
          ),
          '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
        ],
      }),
      'settled',
      'a content stream of operators with wrong operands',
    ),
    m(
      'font-dangling',
      replaceOnce(plain, '/F1 3 0 R', '/F1 999 0 R'),
      'settled',
      'text in a font that does not exist',
    ),
    m('xref-prev-loop', xrefPrevLoopPdf(), 'settled', 'an xref whose /Prev is itself'),
    m(
      'xref-huge-subsection',
      Buffer.from(plain.toString('latin1').replace(/xref\n0 (\d+)/, 'xref\n0 50000000'), 'latin1'),
      'settled',
      'an xref subsection claiming 50 million entries',
    ),
  ];
}

/** Every PDF of the corpus. */
export function hostilePdfs(seed: number, markerPath: string): HostileFile[] {
  const base = basePdf();
  const files: HostileFile[] = [];
  files.push(pdf('control', 'valid-pdf', base, 'finished', 'a valid five-page PDF with an outline'));

  for (let percent = 5; percent <= 95; percent += 10) {
    files.push(
      pdf(
        'pdf-truncated',
        `truncated-${percent}`,
        base.subarray(0, Math.floor((base.length * percent) / 100)),
        'settled',
        `the valid PDF cut at ${percent}%`,
      ),
    );
  }
  for (let i = 1; i <= 8; i++) {
    files.push(
      pdf(
        'pdf-malformed',
        `bitflip-${i}`,
        flipBytes(base, 24, seed + i, 9),
        'settled',
        '24 random bytes of the valid PDF changed',
      ),
    );
  }
  files.push(...malformed());

  const enc = (variant: string, bytes: Buffer, note: string) =>
    pdf('pdf-encrypted', variant, bytes, 'failed', note, { reason: /encrypted/ });
  files.push(
    enc('rc4-empty-user-password', rc4EmptyPasswordPdf(), 'RC4 40-bit; opens without a password'),
    enc(
      'rc4-128-password',
      encryptedPdf('<< /Filter /Standard /V 2 /R 3 /Length 128 /O $O /U $U /P -1028 >>', seed),
      'RC4 128-bit; needs a password',
    ),
    enc(
      'aes-128-password',
      encryptedPdf(
        '<< /Filter /Standard /V 4 /R 4 /Length 128 /CF << /StdCF << /CFM /AESV2 /AuthEvent /DocOpen /Length 16 >> >> /StmF /StdCF /StrF /StdCF /O $O /U $U /P -1028 >>',
        seed + 1,
      ),
      'AES-128; needs a password',
    ),
    enc(
      'aes-256-password',
      encryptedPdf(
        '<< /Filter /Standard /V 5 /R 6 /Length 256 /CF << /StdCF << /CFM /AESV3 /AuthEvent /DocOpen /Length 32 >> >> /StmF /StdCF /StrF /StdCF /O <' +
          randomBytesSeeded(48, seed).toString('hex') +
          '> /U <' +
          randomBytesSeeded(48, seed + 9).toString('hex') +
          '> /OE <' +
          randomBytesSeeded(32, seed + 3).toString('hex') +
          '> /UE <' +
          randomBytesSeeded(32, seed + 4).toString('hex') +
          '> /Perms <' +
          randomBytesSeeded(16, seed + 5).toString('hex') +
          '> /P -1028 >>',
        seed + 2,
      ),
      'AES-256 (R6); needs a password',
    ),
  );
  files.push(
    pdf(
      'pdf-encrypted',
      'unknown-security-handler',
      encryptedPdf('<< /Filter /HostileSecurity /V 9 /R 9 /O $O /U $U /P -1 >>', seed + 3),
      'failed',
      'a security handler nobody implements',
    ),
  );

  const bomb = (
    variant: string,
    bytes: Buffer,
    expect: HostileFile['expect'],
    note: string,
    extra: Partial<HostileFile> = {},
  ) => pdf('pdf-bomb', variant, bytes, expect, note, extra);
  files.push(
    bomb(
      'deep-array-catalog-100k',
      deepNestingPdf(100_000, 'catalog', 'array'),
      'settled',
      'arrays nested 100,000 deep in the catalog',
    ),
    bomb(
      'deep-dict-catalog-50k',
      deepNestingPdf(50_000, 'catalog', 'dict'),
      'settled',
      'dictionaries nested 50,000 deep in the catalog',
    ),
    bomb(
      'deep-array-page-100k',
      deepNestingPdf(100_000, 'page', 'array'),
      'settled',
      'arrays nested 100,000 deep in a page',
    ),
    bomb(
      'deep-array-content-100k',
      deepNestingPdf(100_000, 'content', 'array'),
      'settled',
      'arrays nested 100,000 deep in a content stream',
    ),
    bomb('deep-graphics-state-200k', deepStatePdf(200_000), 'settled', '200,000 nested q … Q'),
    bomb(
      'objstm-claims-1e6',
      objectStreamPdf(1_000_000, 3),
      'settled',
      'an object stream claiming a million objects, holding three',
    ),
    bomb(
      'objstm-200k-objects',
      objectStreamPdf(200_000, 200_000),
      'settled',
      'an object stream really holding 200,000 objects',
    ),
    bomb('page-tree-self-loop', pageTreeLoopPdf('self'), 'settled', 'a page tree that is its own kid'),
    bomb(
      'page-tree-pair-loop',
      pageTreeLoopPdf('pair'),
      'settled',
      "two page-tree nodes that are each other's kid",
    ),
    bomb('page-tree-catalog-kid', pageTreeLoopPdf('catalog'), 'settled', 'the catalog as a page'),
    bomb(
      'page-tree-parent-loop',
      pageTreeLoopPdf('parent'),
      'settled',
      'a /Parent chain that loops (inherited resources)',
    ),
    bomb(
      'claims-1e6-pages',
      claimedPagesPdf('1000000'),
      'settled',
      'a page tree claiming 1,000,000 pages over one',
    ),
    bomb(
      'pages-2500-one-object',
      claimedPagesPdf('2500', 2500),
      'failed',
      'a page tree of 2,500 pages, one page object listed 2,500 times (over the 2,000-page limit)',
      { reason: /has 2500 pages, more than the limit of 2000/ },
    ),
    bomb(
      'claims-2e31-pages',
      claimedPagesPdf('2147483647'),
      'settled',
      'a page tree claiming 2^31 - 1 pages',
    ),
    bomb('claims-1e300-pages', claimedPagesPdf('1e300'), 'settled', 'a page count of 1e300'),
    bomb(
      'claims-300-pages',
      claimedPagesPdf('300'),
      'settled',
      'a page tree claiming 300 pages (under the limit) over one',
    ),
    bomb('flate-bomb-64mb', flateBombPdf(64), 'settled', 'a content stream inflating to 64 MB'),
    bomb('flate-bomb-1gb', flateBombPdf(1024), 'settled', 'a content stream inflating to 1 GB (1 MB of PDF)'),
    bomb(
      'text-explosion-8m-shows',
      textExplosionPdf(256),
      'settled',
      'one page showing a string 8 million times (~170 MB of text)',
    ),
    bomb(
      'page-text-300k-words',
      hugePageTextPdf(300_000),
      'settled',
      'one page of 300,000 distinct words (more than a search index row holds)',
    ),
    bomb('outline-loop', outlinePdf('loop'), 'settled', 'an outline whose items are their own siblings'),
    bomb('outline-5000-deep', outlinePdf('deep'), 'settled', 'an outline nested 5,000 levels deep'),
    bomb('image-2e30-square', hugeImagePdf(), 'settled', 'an image XObject claiming 2^30 × 2^30 pixels'),
  );

  const active = (variant: string, bytes: Buffer, note: string) =>
    pdf('pdf-active', variant, bytes, 'settled', note);
  files.push(
    active(
      'cve-2024-4367-fontmatrix-type1',
      fontMatrixExploitPdf(markerPath),
      "CVE-2024-4367: JavaScript in a Type1 font's /FontMatrix",
    ),
    active(
      'cve-2024-4367-fontmatrix-type3',
      type3FontMatrixExploitPdf(markerPath),
      "the same payload in a Type3 font's /FontMatrix",
    ),
    active(
      'javascript-actions',
      javascriptActionPdf(markerPath),
      'OpenAction, name tree and page actions running JavaScript',
    ),
    active('xfa-script', xfaPdf(markerPath), 'an XFA form with an initialize script'),
    active(
      'postscript-function',
      postscriptFunctionPdf(),
      'a PostScript calculator function 4,000 operators long',
    ),
  );

  files.push(
    pdf(
      'pdf-text',
      'nul-characters',
      awkwardTextPdf('nul'),
      'settled',
      'text with NUL characters (Postgres text cannot hold them)',
    ),
    pdf(
      'pdf-text',
      'control-characters',
      awkwardTextPdf('controls'),
      'settled',
      'text with C0/C1 controls and an ANSI escape',
    ),
    pdf(
      'pdf-text',
      'tounicode-lone-surrogates',
      awkwardTextPdf('surrogate'),
      'settled',
      'a ToUnicode map onto lone surrogates and U+0000',
    ),
  );

  // A PDF followed by a ZIP archive: still a PDF by its first bytes.
  files.push(
    pdf(
      'polyglot',
      'pdf-then-zip',
      Buffer.concat([
        base,
        zipArchive([{ name: 'payload.js', data: Buffer.from(payloadScript(markerPath)) }]),
      ]),
      'finished',
      'a valid PDF with a ZIP archive appended',
    ),
  );
  return files;
}
