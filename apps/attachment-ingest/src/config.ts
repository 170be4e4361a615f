import { availableParallelism } from 'node:os';
import { envInt, QueueName, readCommonConfig, type CommonConfig, type Env } from '@portal/contracts';
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
}

/** Nest injection token of the app's one config object. */
export const INGEST_CONFIG = Symbol('INGEST_CONFIG');

export function readIngestLimits(env: Env): IngestLimits {
  return {
    maxPixels: envInt(env, 'INGEST_MAX_PIXELS', 50_000_000, { min: 1 }),
    pdfMaxPages: envInt(env, 'INGEST_PDF_MAX_PAGES', 2000, { min: 1 }),
    pdfTimeoutMs: envInt(env, 'INGEST_PDF_TIMEOUT_MS', 120_000, { min: 100 }),
    pdfMemoryMb: envInt(env, 'INGEST_PDF_MEMORY_MB', 512, { min: 32 }),
    pdfIdleReaders: envInt(env, 'INGEST_PDF_IDLE_READERS', 2, { min: 0, max: 16 }),
    pageBatch: envInt(env, 'INGEST_PAGE_BATCH', 32, { min: 1, max: 1000 }),
    progressMs: envInt(env, 'INGEST_PROGRESS_MS', 250, { min: 0 }),
    textPageChars: envInt(env, 'INGEST_TEXT_PAGE_CHARS', 4000, { min: 100 }),
    headings: limitsFromEnv(env).HEADINGS,
    pictureThreads: env['VIPS_CONCURRENCY']
      ? 0
      : threadsPerPicture(availableParallelism(), WORKER_OPTIONS[QueueName.Attachments].concurrency ?? 1),
  };
}

export function readConfig(env: Env): AttachmentIngestConfig {
  return {
    ...readCommonConfig(env),
    healthPort: envInt(env, 'HEALTH_PORT', 3102, { min: 1, max: 65535 }),
    catalogue: loadCatalogue(env),
    limits: readIngestLimits(env),
  };
}
