import { deflateSync } from 'node:zlib';

const WORDS =
  'the reader warms up on a few pages of plain prose before the first document arrives so that its first real pages run at full speed'.split(
    ' ',
  );

/**
 * A PDF of `pages` pages of plain text (Helvetica, 30 lines each, deflated), built here: what a
 * new PDF reader reads once before it serves documents, since pdf.js' first pages in a thread run
 * before V8 has optimised its text extraction (docs/benchmarks.md).
 */
export function warmUpPdf(pages = 40): Buffer {
  let k = 0;
  const line = () => {
    const words: string[] = [];
    for (let length = 0; length < 75; length += words[words.length - 1].length + 1) {
      words.push(WORDS[k++ % WORDS.length]);
    }
    return words.join(' ');
  };
  const bodies: Buffer[] = [
    Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'),
    Buffer.from(
      `<< /Type /Pages /Count ${pages} /Kids [${Array.from({ length: pages }, (_, i) => `${4 + i * 2} 0 R`).join(' ')}] >>`,
    ),
    Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'),
  ];
  for (let page = 0; page < pages; page++) {
    const lines = [`Page ${page + 1}`, ...Array.from({ length: 29 }, line)];
    const text = `BT /F1 11 Tf 13 TL 56 780 Td ${lines.map((l) => `(${l}) Tj T*`).join(' ')} ET`;
    const stream = deflateSync(Buffer.from(text, 'latin1'));
    bodies.push(
      Buffer.from(
        `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + page * 2} 0 R >>`,
      ),
      Buffer.concat([
        Buffer.from(`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`),
        stream,
        Buffer.from('\nendstream'),
      ]),
    );
  }
  const chunks = [Buffer.from('%PDF-1.7\n')];
  const offsets: number[] = [];
  let size = chunks[0].length;
  bodies.forEach((body, i) => {
    offsets.push(size);
    const chunk = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from('\nendobj\n')]);
    chunks.push(chunk);
    size += chunk.length;
  });
  const xref = [
    'xref',
    `0 ${bodies.length + 1}`,
    '0000000000 65535 f ',
    ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `),
  ];
  chunks.push(
    Buffer.from(
      `${xref.join('\n')}\ntrailer\n<< /Size ${bodies.length + 1} /Root 1 0 R >>\nstartxref\n${size}\n%%EOF\n`,
    ),
  );
  return Buffer.concat(chunks);
}
