/**
 * What the portal must do with a hostile file (SPEC 7, API.md): refuse it at upload (415
 * `unsupported_type`, 413 `too_large`), fail it in ingest with a reason, read it (`finished`), or
 * settle it either way (`settled`: a reader may or may not recover what is left of a damaged file).
 */
export type HostileOutcome = 'rejected' | 'failed' | 'finished' | 'settled';

export interface HostileFile {
  /** Unique and stable, `<category>/<variant>`. */
  name: string;
  category: HostileCategory;
  /** The name it is uploaded under (it never decides the type). */
  filename: string;
  bytes: Buffer;
  expect: HostileOutcome;
  /** With `rejected`: the error code the upload answers. */
  code?: 'unsupported_type' | 'too_large';
  /** With `failed`: what the reason must say. */
  reason?: RegExp;
  /** The kind the portal must decide from the bytes, when it accepts the file. */
  kind?: 'document' | 'picture';
  /** What the file is and why it is hostile. */
  note: string;
}

export type HostileCategory =
  | 'control'
  | 'pdf-truncated'
  | 'pdf-malformed'
  | 'pdf-encrypted'
  | 'pdf-bomb'
  | 'pdf-active'
  | 'pdf-text'
  | 'image-bomb'
  | 'image-malformed'
  | 'polyglot'
  | 'wrong-name'
  | 'binary'
  | 'text-empty-nul'
  | 'text-invalid-utf8'
  | 'text-huge'
  | 'text-unicode';

export interface HostileOptions {
  /** Seed of every random choice (default 20240607): the same seed gives the same bytes. */
  seed?: number;
  /**
   * A file that a payload hidden in a PDF (CVE-2024-4367's FontMatrix, JavaScript actions) would
   * create if the reader ever evaluated it. Default: a path under the OS temp folder.
   */
  markerPath?: string;
  /** Upload cap of the portal under test, for the one file just over it (default 25 MiB). */
  maxUploadBytes?: number;
}
