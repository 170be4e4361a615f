import type { MessagePort } from 'node:worker_threads';

export interface ReaderInput {
  pdfjsUrl: string;
  standardFontDataUrl: string;
  cMapUrl: string;
  data: Uint8Array;
  /** Largest typed array (in bytes) the thread may allocate; see PDF_MAX_ARRAY_SHARE. */
  maxArrayBytes: number;
}

export type ReaderMessage =
  | { type: 'opened'; pageCount: number; outline: string[]; encrypted: boolean }
  | { type: 'page'; page: number; text: string | null }
  | { type: 'error'; name: string; message: string };

type Pdfjs = typeof import('pdfjs-dist');
type OutlineItem = { title: string; items: OutlineItem[] };

/**
 * The PDF reader's thread: opens the document, posts `opened`, then answers each page number it
 * is sent with that page's text. It runs from its source text (see pdf.repository.ts), so it must
 * stay self-contained: no import, no helper from outside this function.
 */
export async function pdfReaderThread(pdfjs: Pdfjs, input: ReaderInput, port: MessagePort): Promise<void> {
  const post = (msg: ReaderMessage) => port.postMessage(msg);
  let doc;
  try {
    doc = await pdfjs.getDocument({
      data: input.data,
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
      standardFontDataUrl: input.standardFontDataUrl,
      cMapUrl: input.cMapUrl,
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
    return;
  }
  const opened = doc;
  port.on('message', async (pageNumber: number) => {
    try {
      const page = await opened.getPage(pageNumber);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if ('str' in item) text += item.str + (item.hasEOL ? '\n' : '');
      }
      page.cleanup();
      post({ type: 'page', page: pageNumber, text });
    } catch {
      post({ type: 'page', page: pageNumber, text: null });
    }
  });
}
