import { UnreadableFileError } from './media.errors';
import type { ReaderPool } from './reader-pool';
import { openError, type ReaderThread } from './reader-thread';

export interface PdfReaderLimits {
  /** The whole document, opening included; the reader is killed after it. */
  timeoutMs: number;
  /** Heap of the reader's thread. */
  memoryMb: number;
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

/** Readers one document may read with at once (its own and borrowed ones). */
const MAX_LANES = 2;
/** Shorter documents are read by one reader: opening one more costs more than it saves. */
const PARALLEL_MIN_PAGES = 32;

/**
 * Opens `data` on a reader of the pool, under one deadline for the whole document: when it passes,
 * or any reader fails, every reader of the document is ended. A long document also borrows idle
 * readers, each of which opens it too and reads its share of the pages (`lanes`); a borrowed reader
 * goes back as soon as another document needs one.
 */
export async function openPdfDocument(
  pool: ReaderPool,
  data: Buffer,
  limits: PdfReaderLimits,
): Promise<PdfDocument> {
  const primary = await pool.take(limits.memoryMb);
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
  /** Closes the document on the reader and hands the reader back (or ends it when it failed). */
  const finish = async (reader: ReaderThread) => {
    const ended = await reader.answer({ type: 'close' }).catch(() => null);
    if (ended?.type !== 'closed') {
      reader.fail(failure ?? new UnreadableFileError('the PDF reader answered out of turn'));
    }
    pool.giveBack(reader);
  };
  const giveBackIdle = () => {
    for (const lane of free.filter((l) => l !== primary)) {
      free.splice(free.indexOf(lane), 1);
      lanes.splice(lanes.indexOf(lane), 1);
      void finish(lane);
    }
  };
  let closed = false;
  /** Borrowed readers still opening the document, and when they are done. */
  let opening = 0;
  let joining: Promise<unknown> = Promise.resolve();
  const close = async () => {
    if (closed) return;
    closed = true;
    pool.endLending(giveBackIdle);
    await joining;
    await Promise.all(lanes.map(finish));
    clearTimeout(deadline);
  };
  const acquire = () =>
    free.length ? Promise.resolve(free.pop()!) : new Promise<ReaderThread>((resolve) => queue.push(resolve));
  const release = (reader: ReaderThread) => {
    if (reader !== primary && pool.readerWanted) {
      // Another document needs a reader: this borrowed one goes back now.
      lanes.splice(lanes.indexOf(reader), 1);
      void finish(reader);
      return;
    }
    const next = queue.shift();
    if (next) next(reader);
    else free.push(reader);
  };

  try {
    const opened = await primary.open(data);
    if (opened.type !== 'opened') throw new UnreadableFileError(openError(opened));
    if (opened.pageCount >= PARALLEL_MIN_PAGES && !opened.encrypted) {
      // Borrowed readers open the document while the first one already reads, and join in.
      const extras = pool.borrow(limits.memoryMb, MAX_LANES - 1, giveBackIdle);
      for (const extra of extras) {
        start(extra);
        lanes.push(extra);
        opening++;
      }
      joining = Promise.all(
        extras.map(async (extra) => {
          const also = await extra.open(data).catch(() => null);
          opening--;
          if (!closed && !failure && also?.type === 'opened' && also.pageCount === opened.pageCount) {
            release(extra);
          } else {
            lanes.splice(lanes.indexOf(extra), 1);
            await finish(extra);
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
