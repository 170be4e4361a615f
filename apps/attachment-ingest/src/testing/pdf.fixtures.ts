import { rc4Security } from '@portal/testing';

/** A tiny PDF writer for tests: real, valid files with text pages, pages without text, outlines, encryption. */

export interface PdfOutlineItem {
  title: string;
  page: number;
  children?: PdfOutlineItem[];
}

export interface PdfSpec {
  /** Each page: its lines of text (WinAnsi characters only), or null for a page with no text layer. */
  pages: (string[] | null)[];
  outline?: PdfOutlineItem[];
  /**
   * `empty-password`: standard security handler (RC4, revision 2) that opens with no password;
   * `password`: one that needs a password nobody knows.
   */
  encryption?: 'empty-password' | 'password';
}

export function makePdf(spec: PdfSpec): Buffer {
  const objects: string[] = [];
  const reserve = () => objects.push('');
  const set = (id: number, body: string) => (objects[id - 1] = body);
  const add = (body: string) => objects.push(body);

  const catalogId = reserve();
  const pagesId = reserve();
  const fontId = add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  const pageIds = spec.pages.map((lines) => {
    const content = lines
      ? lines.map((line, i) => `BT /F1 12 Tf 72 ${740 - i * 16} Td (${escape(line)}) Tj ET`).join('\n')
      : '0.5 g 72 72 300 300 re f';
    const contentId = add(
      `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
    );
    return add(
      `<< /Type /Page /Parent ${pagesId} 0 R /MediaBox [0 0 612 792] ` +
        `/Resources << /Font << /F1 ${fontId} 0 R >> >> /Contents ${contentId} 0 R >>`,
    );
  });
  set(
    pagesId,
    `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pageIds.length} >>`,
  );

  let outlines = '';
  if (spec.outline?.length) {
    const rootId = reserve();
    const writeLevel = (items: PdfOutlineItem[], parentId: number): number[] => {
      const ids = items.map(() => reserve());
      items.forEach((item, i) => {
        const kids = item.children?.length ? writeLevel(item.children, ids[i]) : [];
        const links = [
          i > 0 ? `/Prev ${ids[i - 1]} 0 R` : '',
          i < ids.length - 1 ? `/Next ${ids[i + 1]} 0 R` : '',
          kids.length ? `/First ${kids[0]} 0 R /Last ${kids[kids.length - 1]} 0 R /Count ${kids.length}` : '',
        ].join(' ');
        set(
          ids[i],
          `<< /Title (${escape(item.title)}) /Parent ${parentId} 0 R ${links} /Dest [${pageIds[item.page - 1]} 0 R /Fit] >>`,
        );
      });
      return ids;
    };
    const top = writeLevel(spec.outline, rootId);
    set(
      rootId,
      `<< /Type /Outlines /First ${top[0]} 0 R /Last ${top[top.length - 1]} 0 R /Count ${top.length} >>`,
    );
    outlines = ` /Outlines ${rootId} 0 R`;
  }
  set(catalogId, `<< /Type /Catalog /Pages ${pagesId} 0 R${outlines} >>`);

  let trailerExtra = '';
  if (spec.encryption) {
    const fileId = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
    const { o, u } = rc4Security(fileId, spec.encryption === 'empty-password' ? '' : 'a secret nobody has');
    const encryptId = add(
      `<< /Filter /Standard /V 1 /R 2 /O <${o.toString('hex')}> /U <${u.toString('hex')}> /P -4 >>`,
    );
    const hex = fileId.toString('hex');
    trailerExtra = ` /Encrypt ${encryptId} 0 R /ID [<${hex}> <${hex}>]`;
  }

  let out = '%PDF-1.4\n%\xe2\xe3\xcf\xd3\n';
  const offsets = objects.map((body, i) => {
    const offset = Buffer.byteLength(out, 'latin1');
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return offset;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `trailer\n<< /Size ${objects.length + 1} /Root ${catalogId} 0 R${trailerExtra} >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

function escape(text: string): string {
  return text.replace(/[\\()]/g, (c) => `\\${c}`);
}
