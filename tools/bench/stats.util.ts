/** The middle value of `values` (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `value` with `digits` decimals, or `n/a` when it is not a finite number (a run that failed). */
export function figure(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}
