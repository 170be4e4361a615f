import { Inject, Injectable } from '@nestjs/common';
import { AttachmentRepository, PDF_TYPE } from '@portal/dal';
import { INGEST_CONFIG, type IngestLimits } from './config';
import type { IngestContext } from './ingest.types';
import { UnreadableFileError } from './media/media.errors';
import { PdfRepository } from './media/pdf.repository';
import { textHeadings } from './text/headings.util';
import { storablePage, storableText } from './text/storable-text.util';
import { decodeUtf8, splitTextPages } from './text/text-pages.util';

/** Types whose lines are data, not prose: no headings are looked for. */
const DATA_TYPES = new Set(['text/csv', 'application/json']);
/** Progress is published about this many times per document at most (and at its first and last page). */
const PROGRESS_EVENTS = 50;

/**
 * A document: text per page, reading progress while it reads, unreadable pages, the first
 * headings, the search index (the pages' tsvector). PDFs are read through PdfRepository; text
 * files are decoded as UTF-8 and cut into pages of `textPageChars` characters.
 */
@Injectable()
export class DocumentIngestService {
  constructor(
    @Inject(AttachmentRepository) private readonly attachments: AttachmentRepository,
    @Inject(PdfRepository) private readonly pdfs: PdfRepository,
    @Inject(INGEST_CONFIG) private readonly config: { limits: IngestLimits },
  ) {}

  async read(ctx: IngestContext): Promise<void> {
    const original = await this.attachments.getBlob(ctx.orgId, ctx.attachment.id, 'original');
    if (!original) throw new UnreadableFileError('the uploaded file is missing');
    if (ctx.attachment.mimeType === PDF_TYPE) await this.readPdf(ctx, original);
    else await this.readText(ctx, original);
  }

  private async readText(ctx: IngestContext, bytes: Buffer): Promise<void> {
    const decoded = decodeUtf8(bytes);
    if (decoded === null) throw new UnreadableFileError('the file is not valid UTF-8 text');
    const text = storableText(decoded);
    const pages = splitTextPages(text, this.config.limits.textPageChars);
    if (!pages.length) throw new UnreadableFileError('the file holds no text');
    const { chars } = await this.readPages(ctx, pages.length, async (n) => pages[n - 1]);
    const headings = DATA_TYPES.has(ctx.attachment.mimeType)
      ? []
      : textHeadings(text, this.config.limits.headings);
    await ctx.report({ status: 'finished', headings, chars, error: null });
  }

  private async readPdf(ctx: IngestContext, bytes: Buffer): Promise<void> {
    const { limits } = this.config;
    const doc = await this.pdfs.open(bytes, { timeoutMs: limits.pdfTimeoutMs, memoryMb: limits.pdfMemoryMb });
    try {
      if (doc.encrypted) throw new UnreadableFileError('the PDF is encrypted; encrypted PDFs are not read');
      if (doc.pageCount < 1) throw new UnreadableFileError('the PDF has no pages');
      if (doc.pageCount > limits.pdfMaxPages) {
        throw new UnreadableFileError(
          `the PDF has ${doc.pageCount} pages, more than the limit of ${limits.pdfMaxPages}`,
        );
      }
      const { chars, texts } = await this.readPages(ctx, doc.pageCount, (n) => doc.readPage(n));
      const headings = doc.outline.length
        ? doc.outline.slice(0, limits.headings)
        : textHeadings(texts.join('\n'), limits.headings);
      await ctx.report({ status: 'finished', headings, chars, error: null });
    } finally {
      await doc.close();
    }
  }

  /**
   * Reads pages 1..pageCount in order, storing each (a re-run replaces, never duplicates) and
   * reporting progress; a page that failed (null) or has no text is unreadable.
   */
  private async readPages(
    ctx: IngestContext,
    pageCount: number,
    read: (page: number) => Promise<string | null>,
  ): Promise<{ chars: number; texts: string[] }> {
    const { orgId, attachment } = ctx;
    const step = Math.max(1, Math.ceil(pageCount / PROGRESS_EVENTS));
    const unreadablePages: number[] = [];
    const texts: string[] = [];
    await ctx.report({ pageCount, pagesRead: 0, unreadablePages });
    for (let page = 1; page <= pageCount; page++) {
      ctx.signal?.throwIfAborted();
      const raw = await read(page);
      const text = raw === null ? null : storablePage(raw);
      if (text === null || text.trim() === '') unreadablePages.push(page);
      texts.push(text ?? '');
      await this.attachments.savePage(orgId, attachment.id, page, text ?? '');
      const publish = page === 1 || page === pageCount || page % step === 0;
      await ctx.report({ pagesRead: page, unreadablePages: [...unreadablePages] }, publish);
    }
    await this.attachments.deletePagesAfter(orgId, attachment.id, pageCount);
    return { chars: texts.reduce((sum, t) => sum + t.length, 0), texts };
  }
}
