import { ReaderThread } from './reader-thread';
import { warmUpPdf } from './warm-up.pdf';

export interface PdfReaderPoolOptions {
  /**
   * Readers kept loaded between documents (default 0: a new thread for every document): loading
   * pdf.js into a new thread is slow, and its first document runs before the JIT has warmed up
   * (docs/benchmarks.md).
   */
  idleReaders?: number;
  /** A reader is retired after this many documents (default 50), so nothing a document left can pile up. */
  documentsPerReader?: number;
}

/**
 * The reader threads between documents. A reader that closed its document in order may serve the
 * next one (`idleReaders` are kept); one that failed never does. A document may also borrow idle
 * readers; a borrowed reader goes back as soon as another document needs one, so there are never
 * more readers than documents being read and idle ones.
 */
export class ReaderPool {
  private readonly idle: ReaderThread[] = [];
  private readonly idleReaders: number;
  private readonly documentsPerReader: number;
  /** Documents waiting for a borrowed reader to come back (null: it failed, start a new one). */
  private readonly waiting: ((reader: ReaderThread | null) => void)[] = [];
  /** Readers borrowed by documents that have one of their own. */
  private readonly lent = new Set<ReaderThread>();
  /** For each document with borrowed readers: gives back those not reading right now. */
  private readonly lenders = new Set<() => void>();
  /** Readers started by prewarm that are still warming up. */
  private readonly warming = new Set<ReaderThread>();
  private stopped = false;

  constructor(options: PdfReaderPoolOptions = {}) {
    this.idleReaders = options.idleReaders ?? 0;
    this.documentsPerReader = options.documentsPerReader ?? 50;
  }

  /** Whether a document waits for a borrowed reader to come back. */
  get readerWanted(): boolean {
    return this.waiting.length > 0;
  }

  /**
   * Starts the idle readers now, so that the first documents wait neither for pdf.js to load nor
   * for V8 to optimise it: each reads a small PDF of its own (warm-up.pdf.ts) once, then joins the
   * idle ones. A document that comes before gets a reader of its own meanwhile.
   */
  async prewarm(memoryMb: number): Promise<void> {
    const started: Promise<void>[] = [];
    for (let n = this.idle.length + this.warming.size; n < this.idleReaders; n++) {
      const reader = this.spawn(memoryMb);
      reader.hold(false);
      this.warming.add(reader);
      started.push(
        this.warmUp(reader).then((warm) => {
          this.warming.delete(reader);
          if (warm) this.giveBack(reader);
          else reader.fail(new Error('the PDF reader failed to warm up'));
        }),
      );
    }
    await Promise.all(started);
  }

  private async warmUp(reader: ReaderThread): Promise<boolean> {
    const deadline = setTimeout(() => reader.fail(new Error('the PDF reader warm-up took too long')), 30_000);
    deadline.unref();
    try {
      const opened = await reader.open(warmUpPdf());
      if (opened.type !== 'opened') return false;
      for (let from = 1; from <= opened.pageCount; from += 8) {
        await reader.answer({ type: 'pages', from, to: Math.min(from + 7, opened.pageCount) });
      }
      return (await reader.answer({ type: 'close' })).type === 'closed';
    } catch {
      return false;
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Ends the idle and warming readers; those given back later are ended too. */
  stop(): void {
    this.stopped = true;
    const stopping = new Error('the ingest worker is stopping');
    for (const reader of [...this.idle.splice(0), ...this.warming]) reader.fail(stopping);
  }

  /**
   * A reader of its own for a document: the most recently used idle one (its JIT is the warmest),
   * else a borrowed one as soon as it comes back, else a new one.
   */
  async take(memoryMb: number): Promise<ReaderThread> {
    const at = this.idle.findLastIndex((r) => r.memoryMb === memoryMb && !r.failure);
    if (at >= 0) return this.idle.splice(at, 1)[0];
    if (this.lent.size > 0) {
      const reader = await new Promise<ReaderThread | null>((resolve) => {
        this.waiting.push(resolve);
        for (const giveBackIdle of this.lenders) giveBackIdle();
      });
      if (reader?.memoryMb === memoryMb) return reader;
      reader?.fail(new Error('the PDF reader is retired'));
    }
    return this.spawn(memoryMb);
  }

  /**
   * Up to `count` idle readers lent to a document that has one already; never while one is awaited.
   * While it holds any, `giveBackIdle` is called whenever another document waits for a reader.
   */
  borrow(memoryMb: number, count: number, giveBackIdle: () => void): ReaderThread[] {
    const borrowed: ReaderThread[] = [];
    while (borrowed.length < count && !this.waiting.length) {
      const at = this.idle.findLastIndex((r) => r.memoryMb === memoryMb && !r.failure);
      if (at < 0) break;
      const reader = this.idle.splice(at, 1)[0];
      this.lent.add(reader);
      borrowed.push(reader);
    }
    if (borrowed.length) this.lenders.add(giveBackIdle);
    return borrowed;
  }

  /** The document that borrowed readers is closing: it gives back none any more on request. */
  endLending(giveBackIdle: () => void): void {
    this.lenders.delete(giveBackIdle);
  }

  /**
   * A reader whose document is done with it: it serves a document that waits, or joins the idle
   * ones, or is retired. A failed one is not kept, and when it was borrowed, a document waiting for
   * it starts a reader of its own.
   */
  giveBack(reader: ReaderThread): void {
    const lent = this.lent.delete(reader);
    if (reader.failure) {
      if (lent) this.waiting.shift()?.(null);
      return;
    }
    const waiter = this.waiting.shift();
    if (waiter) {
      waiter(reader);
      return;
    }
    if (this.stopped || this.idle.length >= this.idleReaders || reader.documents >= this.documentsPerReader) {
      reader.fail(new Error('the PDF reader is retired'));
      return;
    }
    reader.hold(false);
    this.idle.push(reader);
  }

  private spawn(memoryMb: number): ReaderThread {
    return new ReaderThread(memoryMb, (ended) => {
      const at = this.idle.indexOf(ended);
      if (at >= 0) this.idle.splice(at, 1);
    });
  }
}
