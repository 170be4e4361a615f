import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import sharp from 'sharp';
import type { AttachmentManifest } from '@portal/domain';
import {
  E2E_KEYS,
  PORTAL_APPS,
  simplePdf,
  startE2EPortal,
  startFakeOpenAI,
  type E2EConversation,
  type E2EPortal,
  type FakeOpenAI,
  type RunningPortal,
  type SseEvent,
} from '@portal/testing';
import { cpuMs, cpuMsOfAll, ownCpuMs, pidsOf, redisServerPid } from './cpu.util';
import { figure, median, percentile, runMain } from './stats.util';
import { buildServices } from './build.util';

/**
 * `npm run bench:ingest`: what the portal's attachment path costs next to the bare tools doing the
 * same work. The built services run as real processes (like the end-to-end tests) on a fresh
 * database and Redis prefix; no model is called.
 *
 * 1. A 12-megapixel JPEG (4000×3000, EXIF orientation 6) uploaded to a conversation whose agent's
 *    model sees (2048 × 768), N times (`--runs=N`, ≥ 5; 11 by default), each followed by the bare
 *    baselines on the same bytes, after 10 uploads that warm the services up (`--warm-up=N`: a
 *    worker's steady state, as bench:turns measures warm services). Two ratios of medians, each
 *    with its target:
 *    - the ingest worker's own time, from picking the job up to `finished` (the `durationMs` of the
 *      line it logs when the job ends), over one bare sharp call doing the worker's sharp work
 *      (the probe's header read, then rotate + resize to the same size + JPEG encode);
 *    - the whole path, from POST /v1/attachments until the conversation's `attachment_progress`
 *      event says `finished`, over the sum of bare sharp, a bare Postgres write of the bytes (the
 *      blob store's INSERT of a bytea, with `pg`) and a bare upload of the same multipart body to a
 *      plain `node:http` server in another process that reads it whole.
 *    Each run's ratio against the baselines right after it shows how far the machine's speed
 *    drifted during the runs. With the CPU time each part of the machine spent per upload (this
 *    bench as the client, each service, Postgres, Redis; Linux /proc) and per baseline: on a small
 *    machine the path is bound by CPU.
 * 2. A 300-page text PDF (`--pages=N`) the same way, against `pdftotext` on the same file: pages
 *    per second of each (median of `--pdf-runs=N` runs, after one warm-up upload, as for the
 *    picture: the readers' JIT is as warm as it is in a worker that has read a few documents; the
 *    warm-up's own time is shown). For reference, pdf.js alone on the same file: in a fresh
 *    process (cold JIT), and warm, set up as the portal's reader is.
 */

const arg = (name: string, fallback: number) => {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found ? Number(found.split('=')[1]) : fallback;
};
const RUNS = Math.max(5, arg('runs', 11));
const PDF_RUNS = Math.max(1, arg('pdf-runs', 3));
const WARM_UP_UPLOADS = Math.max(1, arg('warm-up', 10));
const PAGES = arg('pages', 300);
const PDFTOTEXT = '/usr/bin/pdftotext';
/** The agent `deep` of the e2e bootstrap uses the model `thinker`: vision 2048 × 768. */
const VISION = { maxLongSide: 2048, maxShortSide: 768 };
const TARGETS = { workerRatio: 1.15, pathRatio: 1.2, pdfRatio: 4 };
const SETTLE_TIMEOUT_MS = 300_000;

// --- Numbers -----------------------------------------------------------------------------------

/** "least–most" of `values`. */
const spread = (values: number[], digits = 1) =>
  `${figure(Math.min(...values), digits)}–${figure(Math.max(...values), digits)}`;

// --- Inputs ------------------------------------------------------------------------------------

/** A 4000×3000 gradient with noise, JPEG quality 90, tagged EXIF orientation 6 (rotate 90°). */
async function twelveMegapixelJpeg(): Promise<Buffer> {
  const width = 4000;
  const height = 3000;
  const raw = Buffer.alloc(width * height * 3);
  let seed = 42;
  const noise = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return (seed >> 16) % 48;
  };
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = Math.min(255, ((x * 200) / width + noise()) | 0);
      raw[i + 1] = Math.min(255, ((y * 200) / height + noise()) | 0);
      raw[i + 2] = Math.min(255, (((x + y) * 100) / (width + height) + 80 + noise()) | 0);
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .withMetadata({ orientation: 6 })
    .toBuffer();
}

const WORDS =
  'the portal reads every page of a document and stores its text so that a model can search and quote it later while the reader keeps within its limits of memory and time'.split(
    ' ',
  );

/** `pages` pages of a few paragraphs each (about 30 lines of 80 characters), deflated. */
function textPdf(pages: number): Buffer {
  let k = 0;
  const line = () => {
    const words: string[] = [];
    let length = 0;
    while (length < 75) {
      const w = WORDS[k++ % WORDS.length];
      words.push(w);
      length += w.length + 1;
    }
    return words.join(' ');
  };
  const content = Array.from({ length: pages }, (_, p) => {
    const lines = [`Chapter ${p + 1}`, ''];
    for (let paragraph = 0; paragraph < 4; paragraph++) {
      for (let l = 0; l < 7; l++) lines.push(line());
      lines.push('');
    }
    return lines;
  });
  return simplePdf(content, { flate: true });
}

// --- The portal path ---------------------------------------------------------------------------

/**
 * POST of one file and its fields as multipart/form-data over node:http, the file's bytes written
 * as they are. The client stands in for a browser on another machine; fetch with FormData would
 * copy and re-chunk the body and take this process more CPU than the gateway spends parsing it,
 * on the same cores as the path it measures.
 */
async function postFile(
  url: string,
  fields: Record<string, string>,
  file: { bytes: Buffer; filename: string; type: string },
): Promise<{ status: number; body: unknown }> {
  const boundary = `----portal-bench-${randomUUID()}`;
  const head = Buffer.from(
    Object.entries(fields)
      .map(
        ([name, value]) =>
          `--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`,
      )
      .join('') +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${file.filename}"\r\n` +
      `content-type: ${file.type}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${E2E_KEYS.alice}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + file.bytes.length + tail.length,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.write(head);
    req.write(file.bytes);
    req.end(tail);
  });
}

interface PathSample {
  id: string;
  /**
   * ms from POST until the 201, until the `reading` event was published (in whole ms), until the
   * `finished` event arrived.
   */
  uploaded: number;
  reading: number;
  finished: number;
  manifest: AttachmentManifest;
}

async function throughPortal(
  e2e: E2EPortal,
  chat: E2EConversation,
  bytes: Buffer,
  filename: string,
  type: string,
): Promise<PathSample> {
  const from = chat.events.events.length;
  const started = performance.now();
  const res = await postFile(
    `${e2e.portal.baseURL}/v1/attachments`,
    { conversationId: chat.id },
    { bytes, filename, type },
  );
  const uploaded = performance.now() - started;
  const body = res.body as { id: string };
  if (res.status !== 201) throw new Error(`upload ${filename}: ${res.status} ${JSON.stringify(body)}`);
  const mine = (e: SseEvent) => e.data.type === 'attachment_progress' && e.data.attachment.id === body.id;
  const done = await chat.events.waitFor(
    (e) => mine(e) && (e.data.attachment.status === 'finished' || e.data.attachment.status === 'failed'),
    { from, timeoutMs: SETTLE_TIMEOUT_MS },
  );
  const finished = performance.now() - started;
  // When the worker picked it up: the `reading` event's stream id is the Redis server's clock in
  // ms (this host's), so it says when it was published, whether before or after the 201.
  const readingEvent = chat.events.events
    .slice(from)
    .find((e) => mine(e) && e.data.attachment.status !== 'pending');
  const reading = readingEvent
    ? Number(readingEvent.id.split('-')[0]) - (performance.timeOrigin + started)
    : NaN;
  const manifest = done.data.attachment as AttachmentManifest;
  if (manifest.status !== 'finished') throw new Error(`${filename}: ${manifest.status} ${manifest.error}`);
  return { id: body.id, uploaded, reading, finished, manifest };
}

/**
 * The ingest worker's own time for one attachment, as it measured it: `durationMs` of the line its
 * queue transport logs when a job's attempt ends (BullMqServer), from picking the job up to the
 * handler's return, which follows the `finished` write and event by one Redis DEL (the hand-off
 * dropped). The line comes through the worker's stdout pipe, so it may trail the event a little.
 */
async function workerMs(portal: RunningPortal, attachmentId: string, timeoutMs = 10_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const text of portal.logs['attachment-ingest'].join('').split('\n')) {
      if (!text.includes(attachmentId) || !text.includes('ingest-attachment completed')) continue;
      const entry = JSON.parse(text) as { attachmentId?: string; msg?: string; durationMs?: number };
      if (entry.attachmentId === attachmentId && entry.msg === 'ingest-attachment completed') {
        return entry.durationMs ?? NaN;
      }
    }
    if (Date.now() > deadline) throw new Error(`no 'ingest-attachment completed' line for ${attachmentId}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// --- The bare tools ----------------------------------------------------------------------------

/**
 * The worker's sharp work, bare: the probe's header read, then orient, resize to the fitted size,
 * encode, no metadata, with the worker's decode options (main turns the cache off, as it does).
 */
async function bareSharp(input: Buffer): Promise<{ ms: number; width: number; height: number }> {
  const started = performance.now();
  const meta = await sharp(input).metadata();
  const long = Math.max(meta.autoOrient.width, meta.autoOrient.height);
  const short = Math.min(meta.autoOrient.width, meta.autoOrient.height);
  const scale = Math.min(1, VISION.maxLongSide / long, VISION.maxShortSide / short);
  const { info } = await sharp(input, {
    limitInputPixels: meta.width * meta.height,
    failOn: 'error',
    autoOrient: true,
    pages: 1,
    animated: false,
  })
    .resize(Math.round(meta.autoOrient.width * scale), Math.round(meta.autoOrient.height * scale), {
      fit: 'fill',
    })
    .jpeg({ quality: 85 })
    .toBuffer({ resolveWithObject: true });
  return { ms: performance.now() - started, width: info.width, height: info.height };
}

/**
 * The bytes written to Postgres as the blob store writes an original (PostgresBlobStore.put: one
 * INSERT, the Buffer a bytea parameter), into the same table of the portal's database, under an
 * id of its own; ms until the durable commit is answered.
 */
async function barePostgresWrite(db: Client, bytes: Buffer): Promise<number> {
  const started = performance.now();
  await db.query(
    `INSERT INTO attachment_blobs (attachment_id, variant, org_id, data) VALUES ($1, $2, $3, $4)
     ON CONFLICT (attachment_id, variant) DO UPDATE SET data = EXCLUDED.data
     WHERE attachment_blobs.org_id = EXCLUDED.org_id
     RETURNING 1`,
    [randomUUID(), 'original', 'bench', bytes],
  );
  return performance.now() - started;
}

/**
 * A plain node:http server in a process of its own, as the gateway is: it reads each request's
 * body whole into one Buffer and answers 201.
 */
async function startBareUploadServer(): Promise<{ url: string; pid: number | undefined; stop(): void }> {
  const script = `
    const { createServer } = require('node:http');
    const server = createServer((req, res) => {
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ bytes: body.length }));
      });
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`bare upload server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}/v1/attachments`, pid: child.pid, stop: () => child.kill() };
}

/** The same multipart POST the portal gets, to the bare server; ms until its answer is read. */
async function bareUpload(url: string, bytes: Buffer): Promise<number> {
  const started = performance.now();
  const file = { bytes, filename: 'bare.jpg', type: 'image/jpeg' };
  const res = await postFile(url, { conversationId: randomUUID() }, file);
  if (res.status !== 201) throw new Error(`bare upload: ${res.status}`);
  return performance.now() - started;
}

function barePdftotext(file: string): number {
  const started = performance.now();
  const run = spawnSync(PDFTOTEXT, ['-enc', 'UTF-8', file, '-'], { maxBuffer: 256 * 1024 * 1024 });
  if (run.status !== 0) throw new Error(`pdftotext: ${run.status} ${run.stderr?.toString()}`);
  return performance.now() - started;
}

/**
 * pdf.js alone on the same file (the legacy build the worker uses, with its options), in a child
 * process so its ESM build loads as is: ms from getDocument to the last page's text, measured inside.
 */
function barePdfjs(file: string): number {
  const pdfjsUrl = pathToFileURL(
    path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'legacy/build/pdf.mjs'),
  ).href;
  const script = `
    import { readFileSync } from 'node:fs';
    const pdfjs = await import(${JSON.stringify(pdfjsUrl)});
    const data = new Uint8Array(readFileSync(${JSON.stringify(file)}));
    const started = performance.now();
    const doc = await pdfjs.getDocument({ data, isEvalSupported: false, disableFontFace: true, useSystemFonts: false,
      useWasm: false, useWorkerFetch: false, isOffscreenCanvasSupported: false, isImageDecoderSupported: false,
      maxImageSize: 0, enableXfa: false, stopAtErrors: false, verbosity: 0 }).promise;
    let chars = 0;
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      for (const item of content.items) chars += item.str?.length ?? 0;
      page.cleanup();
    }
    await doc.destroy();
    process.stdout.write(String(performance.now() - started));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`pdf.js: ${run.status} ${run.stderr}`);
  return Number(run.stdout);
}

/**
 * pdf.js alone as the portal's reader runs it: its worker side loaded first, the native
 * Array.prototype.push put back after the legacy build's polyfill, no DecompressionStream, a
 * warm JIT (the last of `reads` reads in one process). ms of that last read, like barePdfjs.
 */
function barePdfjsWarm(file: string, reads = 3): number {
  const root = path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'legacy/build');
  const script = `
    import { readFileSync } from 'node:fs';
    delete globalThis.DecompressionStream;
    const nativePush = Array.prototype.push;
    await import(${JSON.stringify(pathToFileURL(path.join(root, 'pdf.worker.mjs')).href)});
    const pdfjs = await import(${JSON.stringify(pathToFileURL(path.join(root, 'pdf.mjs')).href)});
    Array.prototype.push = nativePush;
    const bytes = readFileSync(${JSON.stringify(file)});
    let ms = 0;
    for (let read = 0; read < ${reads}; read++) {
      const data = new Uint8Array(bytes);
      const started = performance.now();
      const doc = await pdfjs.getDocument({ data, isEvalSupported: false, disableFontFace: true, useSystemFonts: false,
        useWasm: false, useWorkerFetch: false, isOffscreenCanvasSupported: false, isImageDecoderSupported: false,
        maxImageSize: 0, enableXfa: false, stopAtErrors: false, verbosity: 0 }).promise;
      for (let i = 1; i <= doc.numPages; i++) {
        const page = await doc.getPage(i);
        await page.getTextContent();
        page.cleanup();
      }
      await doc.destroy();
      ms = performance.now() - started;
    }
    process.stdout.write(String(ms));`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`pdf.js (warm): ${run.status} ${run.stderr}`);
  return Number(run.stdout);
}

// --- CPU by part (Linux /proc) ------------------------------------------------------------------

const PARTS = ['client', 'gateway', 'attachment-ingest', 'other services', 'postgres', 'redis'] as const;
type Part = (typeof PARTS)[number];

/**
 * How to read each part's CPU ms so far: this process (the client), each service's process, every
 * Postgres process (the backends and the WAL writer do the durable write), the Redis server.
 */
async function cpuReaders(e2e: E2EPortal): Promise<Record<Part, () => number | null>> {
  const { portal } = e2e;
  const others = PORTAL_APPS.filter((app) => app !== 'gateway' && app !== 'attachment-ingest');
  const postgres = pidsOf('postgres');
  const redis = (await redisServerPid()) ?? undefined;
  return {
    client: ownCpuMs,
    gateway: () => cpuMs(portal.pid('gateway')),
    'attachment-ingest': () => cpuMs(portal.pid('attachment-ingest')),
    'other services': () => cpuMsOfAll(others.flatMap((app) => portal.pid(app) ?? [])),
    postgres: () => cpuMsOfAll(postgres),
    redis: () => cpuMs(redis),
  };
}

function cpuNow(readers: Record<Part, () => number | null>): Map<Part, number> {
  return new Map(
    PARTS.flatMap((part) => {
      const ms = readers[part]();
      return ms === null ? [] : [[part, ms] as const];
    }),
  );
}

function addCpuSince(total: Map<Part, number>, before: Map<Part, number>, now: Map<Part, number>): void {
  for (const [part, ms] of now) total.set(part, (total.get(part) ?? 0) + ms - (before.get(part) ?? ms));
}

/** The bare call's CPU ms in this process (sharp's threads included). */
async function withCpu<T>(work: () => Promise<T>): Promise<{ result: T; cpuMs: number }> {
  const before = ownCpuMs();
  const result = await work();
  return { result, cpuMs: ownCpuMs() - before };
}

/**
 * A full GC of this process, and time for the sweeping it leaves to V8's helper threads: the
 * baselines leave copies of the picture behind (pg's among them), and collected between the runs
 * their GC does not take the client's CPU in the next run's window, on the cores the portal is
 * measured on (docs/benchmarks.md).
 */
async function collectGarbage(): Promise<void> {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  await new Promise((resolve) => setTimeout(resolve, 150));
}

// --- Main --------------------------------------------------------------------------------------

async function main(): Promise<void> {
  buildServices();
  console.log('generating the inputs…');
  const jpeg = await twelveMegapixelJpeg();
  const pdf = textPdf(PAGES);
  const dir = mkdtempSync(path.join(tmpdir(), 'portal-bench-ingest-'));
  const pdfFile = path.join(dir, 'bench.pdf');
  writeFileSync(pdfFile, pdf);
  console.log(
    `  JPEG 4000×3000 (EXIF orientation 6): ${(jpeg.length / 1e6).toFixed(1)} MB; PDF ${PAGES} pages: ${(pdf.length / 1e6).toFixed(2)} MB`,
  );

  let fake: FakeOpenAI | undefined;
  let e2e: E2EPortal | undefined;
  let db: Client | undefined;
  let uploadServer: Awaited<ReturnType<typeof startBareUploadServer>> | undefined;
  try {
    fake = await startFakeOpenAI();
    console.log('starting the portal (built services, fresh database and Redis prefix)…');
    // LOG_LEVEL: the worker's own time is read from its info lines, whatever this shell sets.
    e2e = await startE2EPortal(fake, { env: { RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'info' } });
    const chat = await e2e.conversation('alice', 'deep');
    // Before the CPU readers, which list the Postgres processes once: its backend is among them.
    db = new Client({ connectionString: e2e.portal.database.url });
    await db.connect();
    uploadServer = await startBareUploadServer();
    sharp.cache(false); // as the worker has it

    // 1. Picture: warm-ups, then RUNS alternating the portal and the bare baselines.
    for (let i = 0; i < WARM_UP_UPLOADS; i++) await throughPortal(e2e, chat, jpeg, 'warm.jpg', 'image/jpeg');
    await bareSharp(jpeg);
    await barePostgresWrite(db, jpeg);
    await bareUpload(uploadServer.url, jpeg);
    const picturePortal: PathSample[] = [];
    const pictureWorker: number[] = [];
    const pictureBare: number[] = [];
    const postgresBare: number[] = [];
    const uploadBare: number[] = [];
    const readers = await cpuReaders(e2e);
    const portalCpu = new Map<Part, number>();
    const bareCpu = { sharp: 0, postgres: 0, upload: 0 };
    const serverPid = uploadServer.pid;
    const cpuOf = (...parts: Array<() => number | null>) => parts.reduce((ms, read) => ms + (read() ?? 0), 0);
    let bareSize = '';
    for (let i = 0; i < RUNS; i++) {
      await collectGarbage();
      const before = cpuNow(readers);
      const sample = await throughPortal(e2e, chat, jpeg, `bench-${i}.jpg`, 'image/jpeg');
      await new Promise((resolve) => setTimeout(resolve, 200)); // what each part does after
      addCpuSince(portalCpu, before, cpuNow(readers));
      picturePortal.push(sample);
      pictureWorker.push(await workerMs(e2e.portal, sample.id));

      const { result: bare, cpuMs: sharpCpu } = await withCpu(() => bareSharp(jpeg));
      bareCpu.sharp += sharpCpu;
      pictureBare.push(bare.ms);
      bareSize = `${bare.width}×${bare.height}`;
      const postgresBefore = cpuOf(readers.client, readers.postgres);
      postgresBare.push(await barePostgresWrite(db, jpeg));
      await new Promise((resolve) => setTimeout(resolve, 200));
      bareCpu.postgres += cpuOf(readers.client, readers.postgres) - postgresBefore;
      const uploadBefore = cpuOf(readers.client, () => cpuMs(serverPid));
      uploadBare.push(await bareUpload(uploadServer.url, jpeg));
      bareCpu.upload += cpuOf(readers.client, () => cpuMs(serverPid)) - uploadBefore;
    }
    const picture = picturePortal[0].manifest.picture ?? { width: NaN, height: NaN };
    const baseline = pictureBare.map((ms, i) => ms + postgresBare[i] + uploadBare[i]);

    // 2. PDF.
    const hasPdftotext = existsSync(PDFTOTEXT);
    const pdfPortal: PathSample[] = [];
    const pdfBare: number[] = [];
    const pdfjsBare: number[] = [];
    const pdfjsWarm: number[] = [];
    if (hasPdftotext) barePdftotext(pdfFile); // warm the page cache
    const pdfWarmUp = await throughPortal(e2e, chat, pdf, 'warm.pdf', 'application/pdf');
    for (let i = 0; i < PDF_RUNS; i++) {
      pdfPortal.push(await throughPortal(e2e, chat, pdf, `bench-${i}.pdf`, 'application/pdf'));
      if (hasPdftotext) pdfBare.push(barePdftotext(pdfFile));
      pdfjsBare.push(barePdfjs(pdfFile));
      pdfjsWarm.push(barePdfjsWarm(pdfFile));
    }
    const pagesRead = pdfPortal[0].manifest.pagesRead;

    // --- Report --------------------------------------------------------------------------------
    const W = 68;
    const line = (label: string, ...cells: string[]) =>
      console.log(`${label.padEnd(W)}${cells.map((c) => c.padStart(12)).join('')}`);
    /** Median and p90 of `values`, as two cells. */
    const spreadCells = (values: number[], digits = 1) => [
      figure(median(values), digits),
      figure(percentile(values, 90), digits),
    ];
    const ratioLine = (label: string, target: number, measured: number[], base: number[]) => {
      const ratio = median(measured) / median(base);
      const p90 = percentile(measured, 90) / percentile(base, 90);
      line(
        `   ratio ${label} (target ≤ ${target}×)`,
        `${figure(ratio, 2)}×`,
        `${figure(p90, 2)}×`,
        ratio <= target ? 'met' : 'MISSED',
      );
    };
    console.log('');
    line(`1. 12 MP JPEG → ${picture.width}×${picture.height} JPEG (${RUNS} runs)`, 'median ms', 'p90 ms');
    line(
      `   portal: POST → attachment_progress finished`,
      ...spreadCells(picturePortal.map((s) => s.finished)),
    );
    line(
      `     POST answered (queued, original stored)`,
      ...spreadCells(picturePortal.map((s) => s.uploaded)),
    );
    line(
      `     POST → reading published (upload, hand-off, pick-up)`,
      ...spreadCells(picturePortal.map((s) => s.reading)),
    );
    line(
      `     reading published → finished received (probe, sharp, store)`,
      ...spreadCells(picturePortal.map((s) => s.finished - s.reading)),
    );
    line(`   ingest worker: job picked up → finished (its log line)`, ...spreadCells(pictureWorker));
    line(
      `     the rest of the path: upload, hand-off, pick-up, SSE`,
      ...spreadCells(picturePortal.map((s, i) => s.finished - pictureWorker[i])),
    );
    line(`   bare sharp: probe + rotate + resize to ${bareSize} + encode`, ...spreadCells(pictureBare));
    line(`   bare Postgres write: INSERT of the bytes as a bytea (pg)`, ...spreadCells(postgresBare));
    line(`   bare upload: the same POST to a node:http server`, ...spreadCells(uploadBare));
    line(`   bare sharp + Postgres write + upload`, ...spreadCells(baseline));
    if (portalCpu.size > 0) {
      line(`   CPU ms per upload (mean; the machine has ${availableParallelism()} cores)`, 'CPU ms');
      let sum = 0;
      for (const part of PARTS) {
        const ms = (portalCpu.get(part) ?? 0) / RUNS;
        sum += ms;
        line(`     ${part === 'client' ? 'client (this bench: node:http upload, SSE)' : part}`, figure(ms));
      }
      line(`     all parts of the portal path`, figure(sum));
      line(`     bare sharp`, figure(bareCpu.sharp / RUNS));
      line(`     bare Postgres write (client + Postgres)`, figure(bareCpu.postgres / RUNS));
      line(`     bare upload (client + server)`, figure(bareCpu.upload / RUNS));
      line(`     all bare baselines`, figure((bareCpu.sharp + bareCpu.postgres + bareCpu.upload) / RUNS));
    }
    const workerPairs = pictureWorker.map((ms, i) => ms / pictureBare[i]);
    const pathPairs = picturePortal.map((s, i) => s.finished / baseline[i]);
    line(`   each run / the baselines right after it`, 'median', 'least–most');
    line(`     worker / bare sharp`, `${figure(median(workerPairs), 2)}×`, spread(workerPairs, 2));
    line(
      `     portal / bare sharp + Postgres + upload`,
      `${figure(median(pathPairs), 2)}×`,
      spread(pathPairs, 2),
    );
    line(`   bare sharp over the runs (least–most ms)`, spread(pictureBare));
    line(`   ratios of the medians and of the p90s`, 'median', 'p90');
    ratioLine('worker / bare sharp', TARGETS.workerRatio, pictureWorker, pictureBare);
    ratioLine(
      'portal / bare sharp + Postgres + upload',
      TARGETS.pathRatio,
      picturePortal.map((s) => s.finished),
      baseline,
    );

    console.log('');
    line(`2. ${PAGES}-page text PDF (median of ${PDF_RUNS}; ${pagesRead} pages read)`, 'ms', 'pages/s');
    const pdfMs = median(pdfPortal.map((s) => s.finished));
    const portalRate = PAGES / (pdfMs / 1000);
    line(`   portal: POST → attachment_progress finished`, figure(pdfMs), figure(portalRate));
    line(`     POST answered (queued, original stored)`, figure(median(pdfPortal.map((s) => s.uploaded))));
    line(
      `     POST → reading published (upload, hand-off, pick-up)`,
      figure(median(pdfPortal.map((s) => s.reading))),
    );
    line(
      `     reading published → finished received (pdf.js, store pages)`,
      figure(median(pdfPortal.map((s) => s.finished - s.reading))),
    );
    line(
      `   portal, the warm-up upload before them (readers' JIT cold)`,
      figure(pdfWarmUp.finished),
      figure(PAGES / (pdfWarmUp.finished / 1000)),
    );
    const pdfjsMs = median(pdfjsBare);
    line(
      `   bare pdf.js in one process (getTextContent per page)`,
      figure(pdfjsMs),
      figure(PAGES / (pdfjsMs / 1000)),
    );
    const warmMs = median(pdfjsWarm);
    line(
      `   bare pdf.js, warm, set up as the reader is (one thread)`,
      figure(warmMs),
      figure(PAGES / (warmMs / 1000)),
    );
    if (hasPdftotext) {
      const bareMs = median(pdfBare);
      const bareRate = PAGES / (bareMs / 1000);
      line(`   pdftotext (child process)`, figure(bareMs), figure(bareRate));
      const pdfRatio = bareRate / portalRate;
      line(
        `   ratio pdftotext / portal pages/s (target ≤ ${TARGETS.pdfRatio}×)`,
        '',
        `${figure(pdfRatio, 2)}× ${pdfRatio <= TARGETS.pdfRatio ? 'met' : 'MISSED'}`,
      );
    } else {
      console.log(
        `   ${PDFTOTEXT} is missing: install it with \`sudo apt-get install poppler-utils\` for the comparison`,
      );
    }
  } finally {
    uploadServer?.stop();
    await db?.end();
    await e2e?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) runMain(main);
