import type { OnModuleDestroy } from '@nestjs/common';
import { openPdfDocument, type PdfDocument, type PdfReaderLimits } from './pdf-document';
import { ReaderPool, type PdfReaderPoolOptions } from './reader-pool';

/**
 * pdfjs-dist behind a small class, hardened for untrusted files: it runs in a worker thread of
 * its own (reader-thread.ts) with a heap limit and a deadline for the whole document
 * (pdf-document.ts), and is terminated when either is passed or it crashes, so one hostile file
 * cannot stall or bring down the ingest worker. Its options turn off eval, font faces, system
 * fonts, image decoding and XFA (pdf-reader.thread.ts). Reader threads are kept between
 * documents, and lent to long ones (reader-pool.ts).
 */
export class PdfRepository implements OnModuleDestroy {
  private readonly pool: ReaderPool;

  constructor(options: PdfReaderPoolOptions = {}) {
    this.pool = new ReaderPool(options);
  }

  /** Starts the idle readers now, so that the first documents need not wait for them. */
  prewarm(memoryMb: number): Promise<void> {
    return this.pool.prewarm(memoryMb);
  }

  open(data: Buffer, limits: PdfReaderLimits): Promise<PdfDocument> {
    return openPdfDocument(this.pool, data, limits);
  }

  onModuleDestroy(): void {
    this.pool.stop();
  }
}
