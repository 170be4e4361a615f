import { availableParallelism } from 'node:os';
import { z } from 'zod';
import {
  commonConfigOf,
  commonEnv,
  envVar,
  parseEnv,
  QueueName,
  workerEnv,
  type CommonConfig,
  type Env,
} from '@portal/contracts';
import { loadCatalogue, type ModelEntry } from '@portal/model';
import { limitsFromEnv } from '@portal/prompt';
import { WORKER_OPTIONS } from '@portal/queue';
import { threadsPerPicture } from './media/image.repository';

export interface IngestLimits {
  /** Pictures with more pixels than this (width × height) are refused before decoding. */
  maxPixels: number;
  /** PDFs with more pages are refused. */
  pdfMaxPages: number;
  /** Time one PDF may take, all pages together; its reader is killed after it. */
  pdfTimeoutMs: number;
  /** Heap of the PDF reader's worker thread. */
  pdfMemoryMb: number;
  /** PDF readers kept loaded between documents (each holds pdf.js, some 50 MB). */
  pdfIdleReaders: number;
  /** Pages stored in one statement at most (a document's pages are written in batches). */
  pageBatch: number;
  /**
   * Milliseconds between two progress writes while pages come in (a batch is written sooner when
   * full), and between two published progress events; the first and the last are always published.
   */
  progressMs: number;
  /** Characters of one page of a text file. */
  textPageChars: number;
  /** Headings kept in a manifest (SPEC `HEADINGS`). */
  headings: number;
  /**
   * libvips threads for each picture (see threadsPerPicture); 0 when `VIPS_CONCURRENCY`, libvips'
   * own setting, is set: it wins.
   */
  pictureThreads: number;
}

export interface AttachmentIngestConfig extends CommonConfig {
  healthPort: number;
  catalogue: ModelEntry[];
  limits: IngestLimits;
  logLevel: string;
  shutdownDeadlineMs: number;
  /** BLOB_STORE as set: BlobStoreModule opens the store it names. */
  blobStore: string;
}

const ingestLimitsEnv = {
  INGEST_MAX_PIXELS: envVar.int(
    'Pictures with more pixels (width × height) are refused before decoding',
    50_000_000,
    {
      min: 1,
    },
  ),
  INGEST_PDF_MAX_PAGES: envVar.int('PDFs with more pages are refused', 2000, { min: 1 }),
  INGEST_PDF_TIMEOUT_MS: envVar.int(
    'Time one PDF may take, all pages together; its reader is killed after it',
    120_000,
    {
      min: 100,
    },
  ),
  INGEST_PDF_MEMORY_MB: envVar.int("Heap of the PDF reader's worker thread", 512, { min: 32 }),
  INGEST_PDF_IDLE_READERS: envVar.int('PDF readers kept loaded between documents', 2, { max: 16 }),
  INGEST_PAGE_BATCH: envVar.int('Pages stored in one statement at most', 32, { min: 1, max: 1000 }),
  INGEST_PROGRESS_MS: envVar.int(
    'Milliseconds between two progress writes and events while pages come in',
    250,
  ),
  INGEST_TEXT_PAGE_CHARS: envVar.int('Characters of one page of a text file', 4000, { min: 100 }),
  VIPS_CONCURRENCY: envVar.optional(
    "libvips' own thread count; unset: the worker shares the cores among its pictures",
  ),
};

/** The attachment-ingest worker's environment: every variable it reads, once, in main. */
export const attachmentIngestEnv = z.object({ ...commonEnv, ...workerEnv(3102), ...ingestLimitsEnv });

/** Nest injection token of the app's one config object. */
export const INGEST_CONFIG = Symbol('INGEST_CONFIG');

export function readIngestLimits(env: Env): IngestLimits {
  const vars = parseEnv(z.object(ingestLimitsEnv), env);
  return {
    maxPixels: vars.INGEST_MAX_PIXELS,
    pdfMaxPages: vars.INGEST_PDF_MAX_PAGES,
    pdfTimeoutMs: vars.INGEST_PDF_TIMEOUT_MS,
    pdfMemoryMb: vars.INGEST_PDF_MEMORY_MB,
    pdfIdleReaders: vars.INGEST_PDF_IDLE_READERS,
    pageBatch: vars.INGEST_PAGE_BATCH,
    progressMs: vars.INGEST_PROGRESS_MS,
    textPageChars: vars.INGEST_TEXT_PAGE_CHARS,
    headings: limitsFromEnv(env).HEADINGS,
    pictureThreads: vars.VIPS_CONCURRENCY
      ? 0
      : threadsPerPicture(availableParallelism(), WORKER_OPTIONS[QueueName.Attachments].concurrency ?? 1),
  };
}

export function readConfig(env: Env): AttachmentIngestConfig {
  const vars = parseEnv(attachmentIngestEnv, env);
  return {
    ...commonConfigOf(vars),
    healthPort: vars.HEALTH_PORT,
    catalogue: loadCatalogue(env),
    limits: readIngestLimits(env),
    logLevel: vars.LOG_LEVEL,
    shutdownDeadlineMs: vars.SHUTDOWN_DEADLINE_MS,
    blobStore: vars.BLOB_STORE,
  };
}
