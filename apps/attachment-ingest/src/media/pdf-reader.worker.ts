/**
 * The PDF reader thread's entry (started by reader-thread.ts): it hardens the thread's globals,
 * loads pdf.js and then answers requests with pdfReaderThread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { pdfReaderThread, type ReaderMessage, type ReaderSetup } from './pdf-reader.thread';

const TYPED_ARRAYS = [
  'ArrayBuffer',
  'SharedArrayBuffer',
  'Int8Array',
  'Uint8Array',
  'Uint8ClampedArray',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'Float32Array',
  'Float64Array',
  'BigInt64Array',
  'BigUint64Array',
] as const;

type BufferConstructor = (new (...args: unknown[]) => object) & { BYTES_PER_ELEMENT?: number };

/**
 * Refuses with a RangeError every typed array and ArrayBuffer larger than `maxBytes`, which pdf.js
 * reports as a page it could not read (see PDF_MAX_ARRAY_SHARE). The cap builds each array with
 * the native constructor itself: an array built with the proxy as new.target gets a map of its
 * own, and pdf.js ran twice as slowly over such arrays.
 */
function capBuffers(maxBytes: number): void {
  const globals = globalThis as unknown as Record<string, BufferConstructor | undefined>;
  for (const name of TYPED_ARRAYS) {
    const Native = globals[name];
    if (typeof Native !== 'function') continue;
    const maxLength = Math.floor(maxBytes / (Native.BYTES_PER_ELEMENT || 1));
    const refuse = (n: unknown): never => {
      throw new RangeError(
        `${name} of ${n} elements refused: over the PDF reader limit of ${maxBytes} bytes per buffer`,
      );
    };
    const capped: BufferConstructor = new Proxy(Native, {
      construct(target, args, newTarget) {
        if (typeof args[0] === 'number' && args[0] > maxLength) refuse(args[0]);
        const options = args[1] as { maxByteLength?: unknown } | null | undefined;
        if (options !== null && typeof options === 'object' && Number(options.maxByteLength) > maxLength) {
          refuse(options.maxByteLength);
        }
        return newTarget === capped ? new target(...args) : Reflect.construct(target, args, newTarget);
      },
    });
    globals[name] = capped;
  }
}

const setup = workerData as ReaderSetup;
const port = parentPort!;
const post = (msg: ReaderMessage) => port.postMessage(msg);

// pdf.js loads only once the cap is in place, and without DecompressionStream: pdf.js would
// inflate a whole stream through it into native chunks before any limit could look, and falls
// back to its own decoder, whose buffer is capped.
capBuffers(setup.maxArrayBytes);
delete (globalThis as { DecompressionStream?: unknown }).DecompressionStream;
// pdf.js' legacy build replaces Array.prototype.push with core-js' slower JavaScript version (a fix
// for an error type no reader relies on), so the native one goes back once pdf.js has loaded. Its
// worker side loads first, so that pdf.js runs it in this thread and never loads it again. Both are
// imported here rather than at the top, where imports would run before the cap is in place.
const nativePush = Array.prototype.push;
/** Held in a string, as pdfjs-dist declares no types for this module. */
const PDFJS_WORKER_SIDE: string = 'pdfjs-dist/legacy/build/pdf.worker.mjs';
(async () => {
  await import(PDFJS_WORKER_SIDE);
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  Array.prototype.push = nativePush;
  pdfReaderThread(pdfjs, setup, port);
  post({ type: 'ready' });
})().catch((err) => post({ type: 'error', name: 'LoadError', message: String(err) }));
