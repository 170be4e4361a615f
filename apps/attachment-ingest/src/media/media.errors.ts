/** The file itself cannot be read (corrupt, hostile, too large, encrypted): retrying will not help. */
export class UnreadableFileError extends Error {
  override name = 'UnreadableFileError';
}
