import { Inject, Injectable } from '@nestjs/common';
import { decodeText, PDF_TYPE } from '@portal/application';
import { AttachmentRepository, wholeTextChars, type PageText } from '@portal/dal';
import { inSpan, SPAN } from '@portal/observability';
import { INGEST_CONFIG, type IngestLimits } from './config';
import type { IngestContext } from './ingest.types';
import { UnreadableFileError } from './media/media.errors';
import { PdfRepository } from './media/pdf.repository';
import { textHeadings } from './text/headings.util';
import { storablePage, storableText } from './text/storable-text.util';
import { splitTextPages } from './text/text-pages.util';

/** Types whose lines are data, not prose: no headings are looked for. */
const DATA_TYPES = new Set(['text/csv', 'application/json']);
/**
 * Pages asked of a reader at a time. Requests stay ahead of the answers taken (see readPages),
 * while the pages before are being written, so a reader is never idle and never far ahead.
 */
const READ_AHEAD = 8;

/** Where pages come from: batches of page texts, and how many batches may be asked for at once. */
interface PageSource {
  read(from: number, to: number): Promise<(string | null)[]>;
  lanes(): number;
}

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
    const original = await ctx.original;
    if (!original) throw new UnreadableFileError('the uploaded file is missing');
    if (ctx.attachment.mimeType === PDF_TYPE) await this.readPdf(ctx, original);
    else await this.readText(ctx, original);
  }

  private async readText(ctx: IngestContext, bytes: Buffer): Promise<void> {
    // The gateway refused any other encoding; this guards a file stored some other way.
    const decoded = decodeText(bytes);
    if (decoded === null) throw new UnreadableFileError('the file is not UTF-8 or UTF-16 text');
    const text = storableText(decoded);
    const pages = splitTextPages(text, this.config.limits.textPageChars);
    if (!pages.length) throw new UnreadableFileError('the file holds no text');
    await this.readPages(
      ctx,
      pages.length,
      { read: async (from, to) => pages.slice(from - 1, to), lanes: () => 1 },
      () => (DATA_TYPES.has(ctx.attachment.mimeType) ? [] : textHeadings(text, this.config.limits.headings)),
    );
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
      await this.readPages(
        ctx,
        doc.pageCount,
        { read: (from, to) => doc.readPages(from, to), lanes: () => doc.lanes },
        (texts) =>
          doc.outline.length
            ? doc.outline.slice(0, limits.headings)
            : textHeadings(texts.join('\n'), limits.headings),
      );
    } finally {
      await doc.close();
    }
  }

  /**
   * Reads pages 1..pageCount in order and stores them in batches (a re-run replaces, never
   * duplicates, and removes pages past the end); a page that failed (null) or has no text is
   * unreadable. Each batch's statement also writes the progress: a batch is written when it holds
   * `pageBatch` pages or `progressMs` passed since the last write, at most one write at a time
   * while reading goes on; progress is published at most every `progressMs`. The last batch, the
   * headings and `finished` go in one statement, then that manifest is published.
   */
  private async readPages(
    ctx: IngestContext,
    pageCount: number,
    source: PageSource,
    headingsOf: (texts: string[]) => string[],
  ): Promise<void> {
    const { orgId, attachment } = ctx;
    const { pageBatch, progressMs } = this.config.limits;
    const unreadablePages: number[] = [];
    const texts: string[] = [];
    let batch: PageText[] = [];

    // Batches asked for and not yet taken, oldest first: one per reader the source has, and one
    // more, so that a reader that answers finds its next request waiting.
    const asked: { from: number; pages: Promise<(string | null)[]> }[] = [];
    let unasked = 1;
    const ask = () => {
      while (asked.length < source.lanes() + 1 && unasked <= pageCount) {
        const to = Math.min(unasked + Math.min(READ_AHEAD, pageBatch) - 1, pageCount);
        const pages = inSpan(SPAN.ingestPages, { 'portal.pages.from': unasked, 'portal.pages.to': to }, () =>
          source.read(unasked, to),
        );
        pages.catch(() => undefined); // awaited below, unless the loop stopped first
        asked.push({ from: unasked, pages });
        unasked = to + 1;
      }
    };
    const save = async (pages: PageText[], pagesRead: number, unreadable: number[]) => {
      const manifest = await inSpan(SPAN.ingestStore, { 'portal.pages.count': pages.length }, () =>
        this.attachments.savePages(orgId, attachment.id, pages, {
          pagesRead,
          unreadablePages: unreadable,
        }),
      );
      if (!manifest) throw new Error(`attachment ${attachment.id} is gone`);
      if (performance.now() - publishedAt >= progressMs) {
        publishedAt = performance.now();
        await ctx.publish(manifest);
      }
    };

    ask(); // reading starts while the page count is written
    await ctx.report({ pageCount, pagesRead: 0, unreadablePages: [] });
    let wroteAt = performance.now();
    let publishedAt = wroteAt;
    let writing: Promise<void> = Promise.resolve();
    for (let from = 1; from <= pageCount;) {
      ctx.signal?.throwIfAborted();
      const next = asked.shift();
      if (next?.from !== from) throw new Error(`page ${from} was never asked for`);
      const raws = await next.pages;
      if (!raws.length) throw new Error(`no text came back for page ${from}`);
      const to = from + raws.length - 1;
      ask();
      for (const [i, raw] of raws.entries()) {
        const text = raw === null ? '' : storablePage(raw);
        if (raw === null || text.trim() === '') unreadablePages.push(from + i);
        texts.push(text);
        batch.push({ page: from + i, text });
      }
      from = to + 1;
      if (to < pageCount && (batch.length >= pageBatch || performance.now() - wroteAt >= progressMs)) {
        await writing;
        writing = save(batch, to, [...unreadablePages]);
        writing.catch(() => undefined); // awaited before the next write, unless the loop stopped first
        batch = [];
        wroteAt = performance.now();
      }
    }
    await writing;
    const manifest = await inSpan(SPAN.ingestStore, { 'portal.pages.count': batch.length }, () =>
      this.attachments.savePages(
        orgId,
        attachment.id,
        batch,
        {
          status: 'finished',
          error: null,
          pagesRead: pageCount,
          unreadablePages,
          headings: headingsOf(texts),
          chars: wholeTextChars(texts),
        },
        { lastPage: pageCount },
      ),
    );
    if (!manifest) throw new Error(`attachment ${attachment.id} is gone`);
    await ctx.publish(manifest);
  }
}
