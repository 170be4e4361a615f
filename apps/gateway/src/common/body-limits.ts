/** Request bodies above this answer 413 `too_large`. */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** A refused body up to this size is still read (and thrown away) so its sender sees the 413. */
export const REFUSED_BODY_READ_BYTES = 8 * BODY_LIMIT_BYTES;
