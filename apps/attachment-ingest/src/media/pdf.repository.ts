import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { OnModuleDestroy } from '@nestjs/common';
import { UnreadableFileError } from './media.errors';
import {
  pdfReaderThread,
  type ReaderMessage,
  type ReaderRequest,
  type ReaderSetup,
} from './pdf-reader.thread';
import { warmUpPdf } from './warm-up.pdf';

export interface PdfReaderLimits {
  /** The whole document, opening included; the reader is killed after it. */
  timeoutMs: number;
  /** Heap of the reader's thread. */
  memoryMb: number;
}

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

/** An open PDF. Pages are read on request, a batch at a time, so the reader never runs far ahead. */
export interface PdfDocument {
  pageCount: number;
  /** Outline titles, depth first. */
  outline: string[];
  encrypted: boolean;
  /** Readers the document is read with: requests up to this many batches at once. */
  readonly lanes: number;
  /**
   * The text of pages `from`..`to` (counted from 1), in order; null for a page that failed to read.
   * Several batches may be asked for at once: each goes to a reader that is free.
   */
  readPages(from: number, to: number): Promise<(string | null)[]>;
  /** The page's text, or null when the page failed to read. */
  readPage(page: number): Promise<string | null>;
  /** Ends the document; its reader goes back to the pool, or is terminated when it failed. */
  close(): Promise<void>;
}

const PDFJS_ROOT = dirname(require.resolve('pdfjs-dist/package.json'));
/** Readers one document may read with at once (its own and borrowed ones). */
const MAX_LANES = 2;
/** Shorter documents are read by one reader: opening one more costs more than it saves. */
const PARALLEL_MIN_PAGES = 32;

/**
 * Typed arrays live outside the heap that `resourceLimits` caps, and pdf.js keeps a decoded stream
 * in one Uint8Array that doubles as it grows, so a small deflate bomb grows a reader by gigabytes.
 * So in the reader's thread every typed array (and ArrayBuffer) larger than this share of its heap
 * limit is refused with a RangeError, which pdf.js reports as a page it could not read. The thread has no
 * DecompressionStream either: pdf.js would inflate a whole stream through it into native chunks
 * before any limit could look, and falls back to its own decoder, whose buffer is capped.
 */
export const PDF_MAX_ARRAY_SHARE = 0.25;

// The reader thread runs pdfReaderThread from its source text, so it needs no build step of its
// own and works the same from dist/ and under Jest. Before pdf.js loads, it caps typed arrays.
// The cap builds each array with the native constructor itself: an array built with the proxy as
// new.target gets a map of its own, and pdf.js ran twice as slowly over such arrays.
// pdf.js' legacy build replaces Array.prototype.push with core-js' JavaScript version (a fix for
// an error type no reader relies on), which cost a tenth of the reading time; the thread puts the
// native one back once pdf.js has loaded. It loads pdf.js' worker side first, so that pdf.js runs
// it in this thread and never loads it again.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
delete globalThis.DecompressionStream;
for (const name of ['ArrayBuffer', 'SharedArrayBuffer', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
  'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
  'BigInt64Array', 'BigUint64Array']) {
  const Native = globalThis[name];
  if (typeof Native !== 'function') continue;
  const maxLength = Math.floor(workerData.maxArrayBytes / (Native.BYTES_PER_ELEMENT || 1));
  const refuse = (n) => {
    throw new RangeError(name + ' of ' + n + ' elements refused: over the PDF reader limit of ' + workerData.maxArrayBytes + ' bytes per buffer');
  };
  const capped = new Proxy(Native, {
    construct(target, args, newTarget) {
      if (typeof args[0] === 'number' && args[0] > maxLength) refuse(args[0]);
      const options = args[1];
      if (options !== null && typeof options === 'object' && Number(options.maxByteLength) > maxLength) {
        refuse(options.maxByteLength);
      }
      return newTarget === capped ? new target(...args) : Reflect.construct(target, args, newTarget);
    },
  });
  globalThis[name] = capped;
}
const nativePush = Array.prototype.push;
(async () => {
  await import(workerData.pdfjsWorkerUrl);
  const pdfjs = await import(workerData.pdfjsUrl);
  Array.prototype.push = nativePush;
  (${pdfReaderThread.toString()})(pdfjs, workerData, parentPort);
  parentPort.postMessage({ type: 'ready' });
})().catch((err) => parentPort.postMessage({ type: 'error', name: 'LoadError', message: String(err) }));`;

/** One reader thread: one request at a time, and the first failure ends it for good. */
class ReaderThread {
  readonly ready: Promise<void>;
  documents = 0;
  failure: Error | null = null;
  private readonly worker: Worker;
  private pending: { resolve(msg: ReaderMessage): void; reject(err: Error): void } | null = null;

  constructor(
    readonly memoryMb: number,
    private readonly onEnd: (reader: ReaderThread) => void,
  ) {
    const setup: ReaderSetup = {
      pdfjsUrl: pathToFileURL(join(PDFJS_ROOT, 'legacy/build/pdf.mjs')).href,
      pdfjsWorkerUrl: pathToFileURL(join(PDFJS_ROOT, 'legacy/build/pdf.worker.mjs')).href,
      standardFontDataUrl: join(PDFJS_ROOT, 'standard_fonts') + '/',
      cMapUrl: join(PDFJS_ROOT, 'cmaps') + '/',
      maxArrayBytes: Math.floor(memoryMb * PDF_MAX_ARRAY_SHARE * 1024 * 1024),
    };
    this.worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: setup,
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    });
    this.worker.on('message', (msg: ReaderMessage) => {
      const waiting = this.pending;
      this.pending = null;
      waiting?.resolve(msg);
    });
    this.worker.on('error', (err: Error & { code?: string }) =>
      this.fail(
        new UnreadableFileError(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `the PDF needs more than the reader's ${memoryMb} MB of memory`
            : `the PDF reader failed: ${err.message}`,
        ),
      ),
    );
    this.worker.on('exit', (code) =>
      this.fail(new UnreadableFileError(`the PDF reader stopped (exit code ${code})`)),
    );
    this.ready = this.answer().then((msg) => {
      if (msg.type === 'ready') return;
      this.fail(new UnreadableFileError(openError(msg)));
      throw this.failure;
    });
    this.ready.catch(() => undefined);
  }

  /** Sends the request and waits for its answer (the `ready` message when there is no request). */
  answer(request?: ReaderRequest, transfer?: ArrayBuffer[]): Promise<ReaderMessage> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new Error('the PDF reader is busy'));
    const answer = new Promise<ReaderMessage>((resolve, reject) => (this.pending = { resolve, reject }));
    if (request) this.worker.postMessage(request, transfer);
    return answer;
  }

  /** Ends the reader with this reason (the first one given stays). */
  fail(err: Error): void {
    if (!this.failure) {
      this.failure = err;
      void this.worker.terminate();
      this.onEnd(this);
    }
    const waiting = this.pending;
    this.pending = null;
    waiting?.reject(this.failure);
  }

  /** While idle the thread does not keep the process alive. */
  hold(busy: boolean): void {
    if (busy) this.worker.ref();
    else this.worker.unref();
  }
}

/**
 * pdfjs-dist behind a small class, hardened for untrusted files: it runs in a worker thread of
 * its own with a heap limit and a deadline for the whole document, and is terminated when either
 * is passed or it crashes, so one hostile file cannot stall or bring down the ingest worker. Its
 * options turn off eval, font faces, system fonts, image decoding and XFA.
 *
 * A reader that closed its document in order may serve the next one (`idleReaders` are kept); one
 * that failed never does. A long document also borrows idle readers, each of which opens it too
 * and reads its share of the pages (`lanes`); a borrowed reader goes back as soon as another
 * document needs one, so there are never more readers than documents being read and idle ones.
 */
export class PdfRepository implements OnModuleDestroy {
  private readonly idle: ReaderThread[] = [];
  private readonly idleReaders: number;
  private readonly documentsPerReader: number;
  /** Documents waiting for a borrowed reader to come back (null: it failed, start a new one). */
  private readonly waiting: ((reader: ReaderThread | null) => void)[] = [];
  /** Readers borrowed by documents that have one of their own. */
  private borrowed = 0;
  /** For each document with borrowed readers: gives back those not reading right now. */
  private readonly lenders = new Set<() => void>();
  /** Readers started by prewarm that are still warming up. */
  private readonly warming = new Set<ReaderThread>();
  private stopped = false;

  constructor(options: PdfReaderPoolOptions = {}) {
    this.idleReaders = options.idleReaders ?? 0;
    this.documentsPerReader = options.documentsPerReader ?? 50;
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
      await reader.ready;
      const bytes = new Uint8Array(warmUpPdf());
      const opened = await reader.answer({ type: 'open', data: bytes }, [bytes.buffer as ArrayBuffer]);
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

  async open(data: Buffer, limits: PdfReaderLimits): Promise<PdfDocument> {
    const primary = await this.take(limits.memoryMb);
    const lanes = [primary];
    const free = [primary];
    const queue: ((reader: ReaderThread) => void)[] = [];
    let failure: Error | null = null;
    const fail = (err: Error) => {
      failure ??= err;
      for (const lane of lanes) lane.fail(failure);
    };
    const deadline = setTimeout(
      () => fail(new UnreadableFileError(`reading the PDF took longer than ${limits.timeoutMs / 1000} s`)),
      limits.timeoutMs,
    );
    const start = (reader: ReaderThread) => {
      reader.hold(true);
      reader.documents++;
    };
    start(primary);
    const openOn = async (reader: ReaderThread) => {
      await reader.ready;
      const bytes = new Uint8Array(data);
      return reader.answer({ type: 'open', data: bytes }, [bytes.buffer as ArrayBuffer]);
    };
    /** Closes the document on the reader and hands the reader on (or ends it when it failed). */
    const finish = async (reader: ReaderThread, lent: boolean) => {
      const ended = await reader.answer({ type: 'close' }).catch(() => null);
      if (lent) this.borrowed--;
      if (ended?.type === 'closed') return this.giveBack(reader);
      reader.fail(failure ?? new UnreadableFileError('the PDF reader answered out of turn'));
      if (lent) this.waiting.shift()?.(null);
    };
    const giveBackIdle = () => {
      for (const lane of free.filter((l) => l !== primary)) {
        free.splice(free.indexOf(lane), 1);
        lanes.splice(lanes.indexOf(lane), 1);
        void finish(lane, true);
      }
    };
    let closed = false;
    /** Borrowed readers still opening the document, and when they are done. */
    let opening = 0;
    let joining: Promise<unknown> = Promise.resolve();
    const close = async () => {
      if (closed) return;
      closed = true;
      this.lenders.delete(giveBackIdle);
      await joining;
      await Promise.all(lanes.map((lane) => finish(lane, lane !== primary)));
      clearTimeout(deadline);
    };
    const acquire = () =>
      free.length
        ? Promise.resolve(free.pop()!)
        : new Promise<ReaderThread>((resolve) => queue.push(resolve));
    const release = (reader: ReaderThread) => {
      if (reader !== primary && this.waiting.length) {
        // Another document needs a reader: this borrowed one goes back now.
        lanes.splice(lanes.indexOf(reader), 1);
        void finish(reader, true);
        return;
      }
      const next = queue.shift();
      if (next) next(reader);
      else free.push(reader);
    };

    try {
      const opened = await openOn(primary);
      if (opened.type !== 'opened') throw new UnreadableFileError(openError(opened));
      if (opened.pageCount >= PARALLEL_MIN_PAGES && !opened.encrypted) {
        // Borrowed readers open the document while the first one already reads, and join in.
        const extras = this.borrow(limits.memoryMb, MAX_LANES - 1);
        if (extras.length) this.lenders.add(giveBackIdle);
        for (const extra of extras) {
          start(extra);
          lanes.push(extra);
          opening++;
        }
        joining = Promise.all(
          extras.map(async (extra) => {
            const also = await openOn(extra).catch(() => null);
            opening--;
            if (!closed && !failure && also?.type === 'opened' && also.pageCount === opened.pageCount) {
              release(extra);
            } else {
              lanes.splice(lanes.indexOf(extra), 1);
              await finish(extra, true);
            }
          }),
        );
      }
      const readPages = async (from: number, to: number) => {
        if (failure) throw failure;
        const reader = await acquire();
        try {
          const msg = await reader.answer({ type: 'pages', from, to });
          if (msg.type !== 'pages' || msg.from !== from || msg.texts.length !== to - from + 1) {
            throw new UnreadableFileError('the PDF reader answered out of turn');
          }
          return msg.texts;
        } catch (err) {
          fail(err as Error);
          throw failure ?? err;
        } finally {
          release(reader);
        }
      };
      return {
        pageCount: opened.pageCount,
        outline: opened.outline,
        encrypted: opened.encrypted,
        get lanes() {
          return lanes.length - opening;
        },
        readPages,
        readPage: async (page) => (await readPages(page, page))[0],
        close,
      };
    } catch (err) {
      await close();
      throw err;
    }
  }

  onModuleDestroy(): void {
    this.stopped = true;
    const stopping = new Error('the ingest worker is stopping');
    for (const reader of [...this.idle.splice(0), ...this.warming]) reader.fail(stopping);
  }

  private spawn(memoryMb: number): ReaderThread {
    return new ReaderThread(memoryMb, (ended) => {
      const at = this.idle.indexOf(ended);
      if (at >= 0) this.idle.splice(at, 1);
    });
  }

  /**
   * A reader of its own for a document: the most recently used idle one (its JIT is the warmest),
   * else a borrowed one as soon as it comes back, else a new one.
   */
  private async take(memoryMb: number): Promise<ReaderThread> {
    const at = this.idle.findLastIndex((r) => r.memoryMb === memoryMb && !r.failure);
    if (at >= 0) return this.idle.splice(at, 1)[0];
    if (this.borrowed > 0) {
      const reader = await new Promise<ReaderThread | null>((resolve) => {
        this.waiting.push(resolve);
        for (const giveBackIdle of this.lenders) giveBackIdle();
      });
      if (reader?.memoryMb === memoryMb) return reader;
      reader?.fail(new Error('the PDF reader is retired'));
    }
    return this.spawn(memoryMb);
  }

  /** Up to `count` idle readers lent to a document that has one already; never while one is awaited. */
  private borrow(memoryMb: number, count: number): ReaderThread[] {
    const lent: ReaderThread[] = [];
    while (lent.length < count && !this.waiting.length) {
      const at = this.idle.findLastIndex((r) => r.memoryMb === memoryMb && !r.failure);
      if (at < 0) break;
      lent.push(this.idle.splice(at, 1)[0]);
      this.borrowed++;
    }
    return lent;
  }

  private giveBack(reader: ReaderThread): void {
    if (reader.failure) return;
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
}

function openError(msg: ReaderMessage): string {
  if (msg.type !== 'error') return 'the PDF reader answered out of turn';
  if (msg.name === 'PasswordException') return 'the PDF is encrypted and needs a password';
  if (msg.name === 'InvalidPDFException') return `not a valid PDF (${msg.message})`;
  return `the PDF cannot be opened: ${msg.message}`;
}
