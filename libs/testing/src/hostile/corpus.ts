import { tmpdir } from 'node:os';
import path from 'node:path';
import type { HostileFile, HostileOptions } from './hostile.types';
import { hostilePictures } from './image.generators';
import { hostilePdfs } from './pdf.generators';
import { hostileTexts } from './text.generators';

export const DEFAULT_HOSTILE_SEED = 20240607;

/** Where a hidden PDF payload would leave its mark by default. */
export function defaultMarkerPath(): string {
  return path.join(tmpdir(), 'portal-hostile-payload-ran');
}

/**
 * The hostile corpus: every file generated here from a seed (nothing stored), each with what the
 * portal must do with it. Truncated, encrypted and malformed PDFs, PDF bombs, picture bombs,
 * polyglots, wrong names, empty and NUL-laden files, invalid UTF-8, huge lines and Unicode edge
 * cases, plus a few valid controls. The same options always give the same bytes.
 */
export function hostileCorpus(options: HostileOptions = {}): HostileFile[] {
  const seed = options.seed ?? DEFAULT_HOSTILE_SEED;
  const markerPath = options.markerPath ?? defaultMarkerPath();
  const files = [
    ...hostilePdfs(seed, markerPath),
    ...hostilePictures(seed),
    ...hostileTexts(seed, options.maxUploadBytes ?? 25 * 1024 * 1024),
  ];
  const names = new Set<string>();
  for (const file of files) {
    if (names.has(file.name)) throw new Error(`hostile corpus: two files named ${file.name}`);
    names.add(file.name);
  }
  return files;
}
