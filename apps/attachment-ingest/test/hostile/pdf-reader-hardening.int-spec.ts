import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  flateBombPdf,
  fontMatrixExploitPdf,
  hostileCorpus,
  payloadScript,
  simplePdf,
  type3FontMatrixExploitPdf,
} from '@portal/testing';
import { pdfReaderThread, type ReaderMessage, type ReaderSetup } from '../../src/media/pdf-reader.thread';
import { PdfRepository } from '../../src/media/pdf.repository';

/**
 * The PDF reader against the CVE-2024-4367 class of attack (JavaScript smuggled into a font's
 * FontMatrix, evaluated by pdf.js when eval is allowed) and against decompression bombs: the
 * options it opens documents with, and what the real reader does with generated hostile PDFs.
 */
const LIMITS = { timeoutMs: 30_000, memoryMb: 512 };
const marker = path.join(tmpdir(), `portal-pdf-payload-${randomBytes(4).toString('hex')}`);
const reader = new PdfRepository();

afterEach(() => rmSync(marker, { force: true }));

/** Opens `bytes` with the real reader and reads every page; what it got, or why it failed. */
async function readAll(bytes: Buffer): Promise<{ pages: (string | null)[] } | { error: string }> {
  let doc;
  try {
    doc = await reader.open(bytes, LIMITS);
  } catch (err) {
    return { error: (err as Error).message };
  }
  try {
    const pages: (string | null)[] = [];
    for (let page = 1; page <= Math.min(doc.pageCount, 10); page++) pages.push(await doc.readPage(page));
    return { pages };
  } finally {
    await doc.close();
  }
}

describe('the reader options', () => {
  it('turn off eval, font faces, system fonts, wasm, image decoding and XFA', async () => {
    let options: Record<string, unknown> | undefined;
    const pdfjs = {
      getDocument(opts: Record<string, unknown>) {
        options = opts;
        return {
          promise: Promise.reject(Object.assign(new Error('stop here'), { name: 'InvalidPDFException' })),
        };
      },
    };
    const setup: ReaderSetup = {
      standardFontDataUrl: '/fonts/',
      cMapUrl: '/cmaps/',
      maxArrayBytes: 1024,
    };
    let listener: ((request: unknown) => void) | undefined;
    const answered = new Promise<ReaderMessage>((resolve) =>
      pdfReaderThread(pdfjs as never, setup, {
        postMessage: (m: ReaderMessage) => resolve(m),
        on: (_: string, fn: (request: unknown) => void) => (listener = fn),
      } as never),
    );
    listener!({ type: 'open', data: new Uint8Array([1, 2, 3]) });
    const posted = [await answered];

    expect(options).toMatchObject({
      isEvalSupported: false,
      disableFontFace: true,
      useSystemFonts: false,
      useWasm: false,
      useWorkerFetch: false,
      isOffscreenCanvasSupported: false,
      isImageDecoderSupported: false,
      maxImageSize: 0,
      enableXfa: false,
    });
    expect(posted).toEqual([{ type: 'error', name: 'InvalidPDFException', message: 'stop here' }]);
  });
});

describe('CVE-2024-4367: JavaScript in a FontMatrix', () => {
  it('the payload is real: evaluated, it leaves the marker file behind', () => {
    const probe = `${marker}-probe`;
    try {
      new Function(payloadScript(probe))();
      expect(existsSync(probe)).toBe(true);
      expect((globalThis as Record<string, unknown>).__hostilePdfPayloadRan).toBe(true);
    } finally {
      rmSync(probe, { force: true });
      delete (globalThis as Record<string, unknown>).__hostilePdfPayloadRan;
    }
  });

  it.each([
    ['a Type1 font (the published exploit)', fontMatrixExploitPdf],
    ['a Type3 font', type3FontMatrixExploitPdf],
  ])('is read as text from %s and the payload never runs', async (_, make) => {
    const result = await readAll(make(marker));
    expect(result).toEqual({ pages: [expect.any(String)] });
    expect(existsSync(marker)).toBe(false);
    expect((globalThis as Record<string, unknown>).__hostilePdfPayloadRan).toBeUndefined();
  });

  it('runs no script of any active PDF of the corpus (actions, XFA, PostScript functions)', async () => {
    const active = hostileCorpus({ markerPath: marker }).filter((f) => f.category === 'pdf-active');
    expect(active.length).toBeGreaterThanOrEqual(5);
    for (const file of active) {
      const result = await readAll(file.bytes);
      expect({ file: file.name, ok: 'pages' in result }).toEqual({ file: file.name, ok: true });
    }
    expect(existsSync(marker)).toBe(false);
  }, 60_000);
});

describe('decompression bombs', () => {
  it('a 2 GB deflate bomb (2 MB of PDF) loses its stream without growing the process by gigabytes', async () => {
    const bomb = flateBombPdf(2048);
    expect(bomb.length).toBeLessThan(4 * 1024 * 1024);
    global.gc?.();
    const before = process.memoryUsage.rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
    try {
      const result = await readAll(bomb);
      // The bomb's stream is dropped; the page's other stream is read.
      expect(result).toEqual({ pages: ['Before the blanks.'] });
    } finally {
      clearInterval(sampler);
    }
    // The reader's heap (512 MB) plus at most one capped buffer (a quarter of it) and its copy.
    const grownMb = (peak - before) / 1024 / 1024;
    console.log(`2 GB deflate bomb: the process grew by ${Math.round(grownMb)} MB at most`);
    expect(grownMb).toBeLessThan(LIMITS.memoryMb + 256);
  }, 60_000);

  it('still reads an ordinary PDF in full', async () => {
    const pages = [['First page.'], ['Second page, with café and naïve.']];
    expect(await readAll(simplePdf(pages, { flate: true }))).toEqual({
      pages: ['First page.', 'Second page, with café and naïve.'],
    });
  });
});

describe('readers kept between documents', () => {
  const pages = (count: number, prefix: string) =>
    Array.from({ length: count }, (_, i) => [`${prefix} page ${i + 1}`, 'Revenue grew in the north.']);
  const expected = (count: number, prefix: string) =>
    Array.from({ length: count }, (_, i) => `${prefix} page ${i + 1}\nRevenue grew in the north.`);

  async function readWith(pool: PdfRepository, bytes: Buffer, limits = LIMITS): Promise<(string | null)[]> {
    const doc = await pool.open(bytes, limits);
    try {
      return await doc.readPages(1, doc.pageCount);
    } finally {
      await doc.close();
    }
  }

  it('read hostile documents one after another and still read an ordinary one in full', async () => {
    // A smaller heap, so that a small bomb passes the cap on typed arrays (a quarter of it).
    const limits = { timeoutMs: 30_000, memoryMb: 128 };
    const pool = new PdfRepository({ idleReaders: 1 });
    try {
      const active = hostileCorpus({ markerPath: marker }).filter((f) => f.category === 'pdf-active');
      for (const file of [
        ...active.map((f) => f.bytes),
        fontMatrixExploitPdf(marker),
        type3FontMatrixExploitPdf(marker),
      ]) {
        await readWith(pool, file, limits).catch(() => null);
      }
      expect(await readWith(pool, flateBombPdf(64), limits)).toEqual(['Before the blanks.']);
      const later = simplePdf(pages(3, 'Later'), { flate: true });
      expect(await readWith(pool, later, limits)).toEqual(expected(3, 'Later'));
      expect(existsSync(marker)).toBe(false);
      expect((globalThis as Record<string, unknown>).__hostilePdfPayloadRan).toBeUndefined();
    } finally {
      pool.onModuleDestroy();
    }
  }, 60_000);

  it('end a reader that passed the time limit; the next document gets a sound one', async () => {
    const pool = new PdfRepository({ idleReaders: 1 });
    await pool.prewarm(LIMITS.memoryMb);
    try {
      expect(await readWith(pool, simplePdf(pages(1, 'Warm'), { flate: true }))).toEqual(expected(1, 'Warm'));
      const long = simplePdf(pages(400, 'Long'), { flate: true });
      await expect(readWith(pool, long, { ...LIMITS, timeoutMs: 20 })).rejects.toThrow(
        'reading the PDF took longer than 0.02 s',
      );
      expect(await readWith(pool, simplePdf(pages(2, 'Next'), { flate: true }))).toEqual(expected(2, 'Next'));
    } finally {
      pool.onModuleDestroy();
    }
  }, 60_000);

  it('read a long document with a borrowed reader too, and give it back when another document needs one', async () => {
    const pool = new PdfRepository({ idleReaders: 2 });
    await pool.prewarm(LIMITS.memoryMb);
    try {
      const long = await pool.open(simplePdf(pages(80, 'Long'), { flate: true }), LIMITS);
      // The borrowed reader joins once it has opened the document too.
      for (let i = 0; i < 200 && long.lanes < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(long.lanes).toBe(2);
      const [first, second] = await Promise.all([long.readPages(1, 8), long.readPages(9, 16)]);
      expect([...first, ...second]).toEqual(expected(16, 'Long'));
      // Another document opens while the long one is read: the borrowed reader goes back to it.
      const [other, rest] = await Promise.all([
        readWith(pool, simplePdf(pages(2, 'Other'), { flate: true })),
        (async () => {
          const texts: (string | null)[] = [];
          for (let from = 17; from <= 80; from += 8) texts.push(...(await long.readPages(from, from + 7)));
          return texts;
        })(),
      ]);
      expect(other).toEqual(expected(2, 'Other'));
      expect(rest).toEqual(expected(80, 'Long').slice(16));
      expect(long.lanes).toBe(1);
      await long.close();
    } finally {
      pool.onModuleDestroy();
    }
  }, 60_000);
});
