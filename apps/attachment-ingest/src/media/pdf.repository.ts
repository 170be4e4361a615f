import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { UnreadableFileError } from './media.errors';
import { pdfReaderThread, type ReaderInput, type ReaderMessage } from './pdf-reader.thread';

export interface PdfReaderLimits {
  /** The whole document, opening included; the reader is killed after it. */
  timeoutMs: number;
  /** Heap of the reader's thread. */
  memoryMb: number;
}

/** An open PDF. Pages are read one at a time, on request, so the reader never runs ahead. */
export interface PdfDocument {
  pageCount: number;
  /** Outline titles, depth first. */
  outline: string[];
  encrypted: boolean;
  /** The page's text, or null when the page failed to read. */
  readPage(page: number): Promise<string | null>;
  close(): Promise<void>;
}

const PDFJS_ROOT = dirname(require.resolve('pdfjs-dist/package.json'));

/**
 * Typed arrays live outside the heap that `resourceLimits` caps, and pdf.js keeps a decoded stream
 * in one Uint8Array that doubles as it grows: a 1.5 MB deflate bomb grew the reader by 3 GB. So in
 * the reader's thread every typed array (and ArrayBuffer) larger than this share of its heap limit
 * is refused with a RangeError, which pdf.js reports as a page it could not read. The thread has no
 * DecompressionStream either: pdf.js would inflate a whole stream through it into native chunks
 * before any limit could look, and falls back to its own decoder, whose buffer is capped.
 */
export const PDF_MAX_ARRAY_SHARE = 0.25;

// The reader thread runs pdfReaderThread from its source text, so it needs no build step of its
// own and works the same from dist/ and under Jest. Before pdf.js loads, it caps typed arrays.
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
delete globalThis.DecompressionStream;
for (const name of ['ArrayBuffer', 'SharedArrayBuffer', 'Int8Array', 'Uint8Array', 'Uint8ClampedArray',
  'Int16Array', 'Uint16Array', 'Int32Array', 'Uint32Array', 'Float32Array', 'Float64Array',
  'BigInt64Array', 'BigUint64Array']) {
  const Native = globalThis[name];
  if (typeof Native !== 'function') continue;
  const maxLength = Math.floor(workerData.maxArrayBytes / (Native.BYTES_PER_ELEMENT || 1));
  globalThis[name] = new Proxy(Native, {
    construct(target, args, newTarget) {
      if (typeof args[0] === 'number' && args[0] > maxLength) {
        throw new RangeError(name + ' of ' + args[0] + ' elements refused: over the PDF reader limit of ' + workerData.maxArrayBytes + ' bytes per buffer');
      }
      return Reflect.construct(target, args, newTarget);
    },
  });
}
import(workerData.pdfjsUrl).then(
  (pdfjs) => (${pdfReaderThread.toString()})(pdfjs, workerData, parentPort),
  (err) => parentPort.postMessage({ type: 'error', name: 'LoadError', message: String(err) }),
);`;

/**
 * pdfjs-dist behind a small class, hardened for untrusted files: it runs in a worker thread of
 * its own with a heap limit and a deadline for the whole document, and is terminated when either
 * is passed or it crashes, so one hostile file cannot stall or bring down the ingest worker. Its
 * options turn off eval, font faces, system fonts, image decoding and XFA.
 */
export class PdfRepository {
  async open(data: Buffer, limits: PdfReaderLimits): Promise<PdfDocument> {
    const input: ReaderInput = {
      pdfjsUrl: pathToFileURL(join(PDFJS_ROOT, 'legacy/build/pdf.mjs')).href,
      standardFontDataUrl: join(PDFJS_ROOT, 'standard_fonts') + '/',
      cMapUrl: join(PDFJS_ROOT, 'cmaps') + '/',
      data: new Uint8Array(data),
      maxArrayBytes: Math.floor(limits.memoryMb * PDF_MAX_ARRAY_SHARE * 1024 * 1024),
    };
    const worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: input,
      resourceLimits: {
        maxOldGenerationSizeMb: limits.memoryMb,
        maxYoungGenerationSizeMb: 32,
        stackSizeMb: 4,
      },
    });

    let pending: { resolve(msg: ReaderMessage): void; reject(err: Error): void } | null = null;
    let failure: Error | null = null;
    let closed = false;
    const stop = (err: Error) => {
      clearTimeout(deadline);
      if (!failure) failure = err;
      pending?.reject(failure);
      pending = null;
      void worker.terminate();
    };
    const deadline = setTimeout(
      () => stop(new UnreadableFileError(`reading the PDF took longer than ${limits.timeoutMs / 1000} s`)),
      limits.timeoutMs,
    );
    worker.on('message', (msg: ReaderMessage) => {
      const waiting = pending;
      pending = null;
      waiting?.resolve(msg);
    });
    worker.on('error', (err: Error & { code?: string }) =>
      stop(
        new UnreadableFileError(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? `the PDF needs more than the reader's ${limits.memoryMb} MB of memory`
            : `the PDF reader failed: ${err.message}`,
        ),
      ),
    );
    worker.on('exit', (code) => {
      if (!closed) stop(new UnreadableFileError(`the PDF reader stopped (exit code ${code})`));
    });
    const receive = () =>
      failure
        ? Promise.reject(failure)
        : new Promise<ReaderMessage>((resolve, reject) => (pending = { resolve, reject }));
    const close = async () => {
      closed = true;
      clearTimeout(deadline);
      await worker.terminate();
    };

    const opened = await receive().catch(async (err: Error) => {
      await close();
      throw err;
    });
    if (opened.type !== 'opened') {
      await close();
      throw new UnreadableFileError(openError(opened));
    }
    return {
      pageCount: opened.pageCount,
      outline: opened.outline,
      encrypted: opened.encrypted,
      async readPage(page: number) {
        const answer = receive();
        worker.postMessage(page);
        const msg = await answer;
        return msg.type === 'page' ? msg.text : null;
      },
      close,
    };
  }
}

function openError(msg: ReaderMessage): string {
  if (msg.type !== 'error') return 'the PDF reader answered out of turn';
  if (msg.name === 'PasswordException') return 'the PDF is encrypted and needs a password';
  if (msg.name === 'InvalidPDFException') return `not a valid PDF (${msg.message})`;
  return `the PDF cannot be opened: ${msg.message}`;
}
