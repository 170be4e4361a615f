import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { UnreadableFileError } from './media.errors';
import type { ReaderMessage, ReaderRequest, ReaderSetup } from './pdf-reader.thread';

const PDFJS_ROOT = dirname(require.resolve('pdfjs-dist/package.json'));

/**
 * Typed arrays live outside the heap that `resourceLimits` caps, and pdf.js keeps a decoded stream
 * in one Uint8Array that doubles as it grows, so a small deflate bomb grows a reader by gigabytes.
 * So in the reader's thread every typed array (and ArrayBuffer) larger than this share of its heap
 * limit is refused (pdf-reader.worker.ts).
 */
export const PDF_MAX_ARRAY_SHARE = 0.25;

/** The worker file beside this one: JavaScript in dist/, TypeScript when run from the sources. */
const READER_WORKER = require.resolve('./pdf-reader.worker');
// A worker thread gets neither Jest's transform nor, on Node 20, the loader hooks of tsx's
// `--import`, and any `--import` makes it load its entry as an ES module, so a .ts worker starts
// with tsx's CommonJS hook alone in place of the parent's flags.
const READER_EXEC_ARGV = READER_WORKER.endsWith('.ts')
  ? ['--require', require.resolve('tsx/cjs')]
  : undefined;

/** One reader thread: one request at a time, and the first failure ends it for good. */
export class ReaderThread {
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
      standardFontDataUrl: join(PDFJS_ROOT, 'standard_fonts') + '/',
      cMapUrl: join(PDFJS_ROOT, 'cmaps') + '/',
      maxArrayBytes: Math.floor(memoryMb * PDF_MAX_ARRAY_SHARE * 1024 * 1024),
    };
    this.worker = new Worker(READER_WORKER, {
      execArgv: READER_EXEC_ARGV,
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

  /**
   * Opens a document once the reader is ready: a copy of `data` is transferred, so the caller's
   * bytes stay usable (another reader may open the same document).
   */
  async open(data: Uint8Array): Promise<ReaderMessage> {
    await this.ready;
    const bytes = new Uint8Array(data);
    return this.answer({ type: 'open', data: bytes }, [bytes.buffer as ArrayBuffer]);
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

/** Why a document could not be opened, from the reader's answer to `open`. */
export function openError(msg: ReaderMessage): string {
  if (msg.type !== 'error') return 'the PDF reader answered out of turn';
  if (msg.name === 'PasswordException') return 'the PDF is encrypted and needs a password';
  if (msg.name === 'InvalidPDFException') return `not a valid PDF (${msg.message})`;
  return `the PDF cannot be opened: ${msg.message}`;
}
