import type { MessagePort } from 'node:worker_threads';

/** What a reader thread is started with (its workerData); it serves one document at a time. */
export interface ReaderSetup {
  standardFontDataUrl: string;
  cMapUrl: string;
  /** Largest typed array (in bytes) the thread may allocate; see PDF_MAX_ARRAY_SHARE. */
  maxArrayBytes: number;
}

/** What the reader is asked, one request at a time, each answered by one ReaderMessage. */
export type ReaderRequest =
  | { type: 'open'; data: Uint8Array }
  /** Pages `from`..`to` (inclusive, counted from 1) of the open document. */
  | { type: 'pages'; from: number; to: number }
  | { type: 'close' };

export type ReaderMessage =
  | { type: 'ready' }
  | { type: 'opened'; pageCount: number; outline: string[]; encrypted: boolean }
  /** The text of each page asked for, in order; null for a page that failed to read. */
  | { type: 'pages'; from: number; texts: (string | null)[] }
  | { type: 'closed' }
  | { type: 'error'; name: string; message: string };

type Pdfjs = typeof import('pdfjs-dist');
type OutlineItem = { title: string; items: OutlineItem[] };
type Port = Pick<MessagePort, 'postMessage' | 'on'>;

/**
 * The PDF reader's thread: answers `open` (the document's page count, outline and whether it is
 * encrypted), `pages` (their text) and `close`, for one document after another. The worker
 * (pdf-reader.worker.ts) runs it once pdf.js has loaded; tests give it a pdf.js of their own.
 * Answers the requests in the order they came, one at a time.
 */
export function pdfReaderThread(pdfjs: Pdfjs, setup: ReaderSetup, port: Port): void {
  const post = (msg: ReaderMessage) => port.postMessage(msg);
  let doc: Awaited<ReturnType<Pdfjs['getDocument']>['promise']> | null = null;

  const open = async (data: Uint8Array) => {
    try {
      doc = await pdfjs.getDocument({
        data,
        isEvalSupported: false,
        disableFontFace: true,
        useSystemFonts: false,
        useWasm: false,
        useWorkerFetch: false,
        isOffscreenCanvasSupported: false,
        isImageDecoderSupported: false,
        maxImageSize: 0,
        enableXfa: false,
        stopAtErrors: false,
        standardFontDataUrl: setup.standardFontDataUrl,
        cMapUrl: setup.cMapUrl,
        cMapPacked: true,
        verbosity: 0,
      }).promise;
      const { info } = await doc.getMetadata();
      const outline: string[] = [];
      const walk = (items: OutlineItem[] | null) => {
        for (const item of items ?? []) {
          if (outline.length >= 100) return;
          const title = String(item.title ?? '')
            .replace(/\s+/g, ' ')
            .trim();
          if (title) outline.push(title);
          walk(item.items);
        }
      };
      walk((await doc.getOutline().catch(() => null)) as OutlineItem[] | null);
      const encrypted = Boolean((info as { EncryptFilterName?: string | null }).EncryptFilterName);
      post({ type: 'opened', pageCount: doc.numPages, outline, encrypted });
    } catch (err) {
      const e = err as Error;
      post({ type: 'error', name: e?.name ?? 'Error', message: e?.message ?? String(err) });
    }
  };

  const pages = async (from: number, to: number) => {
    const texts: (string | null)[] = [];
    for (let pageNumber = from; pageNumber <= to; pageNumber++) {
      try {
        if (!doc) throw new Error('no document is open');
        const page = await doc.getPage(pageNumber);
        const content = await page.getTextContent();
        let text = '';
        for (const item of content.items) {
          if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '');
        }
        page.cleanup();
        texts.push(text);
      } catch {
        texts.push(null);
      }
    }
    post({ type: 'pages', from, texts });
  };

  const close = async () => {
    const open = doc;
    doc = null;
    await open?.destroy().catch(() => undefined);
    post({ type: 'closed' });
  };

  let queue = Promise.resolve();
  port.on('message', (req: ReaderRequest) => {
    queue = queue.then(() =>
      req.type === 'open' ? open(req.data) : req.type === 'pages' ? pages(req.from, req.to) : close(),
    );
  });
}
