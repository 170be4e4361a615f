/**
 * Grapheme clusters (what a reader sees as one character: a letter with its tone marks, an emoji
 * with its joiners and skin tone, a flag) cut with `Intl.Segmenter`, so that nothing drawn on
 * screen ever shows half of one.
 */
const segmenter = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

export function splitGraphemes(text: string): string[] {
  return Array.from(segmenter.segment(text), (s) => s.segment);
}

/**
 * Text that arrives in pieces, cut into clusters as it comes. The last cluster stays open until
 * more text or `close()` says it is complete: the next piece may still extend it (a tone mark
 * after its letter, a joiner and the rest of an emoji, the low half of a surrogate pair).
 */
export interface GraphemeBuffer {
  push(text: string): void;
  /** No more text: the open cluster is complete. */
  close(): void;
  /** Complete clusters, in order. Grows only. */
  readonly clusters: readonly string[];
}

export function createGraphemeBuffer(): GraphemeBuffer {
  const clusters: string[] = [];
  let open = '';
  let closed = false;

  return {
    clusters,
    push(text: string) {
      if (closed) throw new Error('GraphemeBuffer: push after close');
      if (!text) return;
      // Only the open cluster and the new text are cut again: a boundary depends on what comes
      // before it and on the one code point after it, so every earlier boundary is settled. A
      // piece may end between the two halves of a surrogate pair: that half waits, uncut.
      let pending = open + text;
      let half = '';
      if (/[\uD800-\uDBFF]$/.test(pending)) {
        half = pending.slice(-1);
        pending = pending.slice(0, -1);
      }
      const parts = splitGraphemes(pending);
      open = (parts.pop() ?? '') + half;
      for (const part of parts) clusters.push(part);
    },
    close() {
      if (closed) return;
      closed = true;
      if (open) clusters.push(open);
      open = '';
    },
  };
}
