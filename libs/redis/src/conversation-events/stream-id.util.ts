/**
 * Orders two Redis stream ids (`<ms>-<seq>`): negative when `a` is older, 0 when equal, positive
 * when newer. Compared as numbers, since a client's `Last-Event-ID` may carry leading zeros.
 */
export function compareStreamIds(a: string, b: string): number {
  const [aMs, aSeq] = a.split('-');
  const [bMs, bSeq] = b.split('-');
  return compareDigits(aMs, bMs) || compareDigits(aSeq, bSeq);
}

/** Compares two runs of decimal digits by value, without BigInt's allocation per event. */
function compareDigits(a: string, b: string): number {
  const x = a.length > 1 && a[0] === '0' ? a.replace(/^0+(?=\d)/, '') : a;
  const y = b.length > 1 && b[0] === '0' ? b.replace(/^0+(?=\d)/, '') : b;
  if (x.length !== y.length) return x.length - y.length;
  return x < y ? -1 : x > y ? 1 : 0;
}
