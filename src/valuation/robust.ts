/**
 * Small robust statistics on plain numbers (log prices, residuals; never money amounts).
 */

/** Median of `xs` (mean of the two middle values for an even count); NaN for an empty list. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Weighted median of `xs` with positive `weights`: the value where the cumulative weight (sorted by
 * value) reaches half the total; when it lands exactly on a boundary, the mean of the two neighbours
 * (so two equally weighted values give their midpoint). NaN for an empty list.
 */
export function weightedMedian(xs: readonly number[], weights: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const idx = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]!);
  const total = weights.reduce((s, w) => s + w, 0);
  let cum = 0;
  for (let k = 0; k < idx.length; k++) {
    const i = idx[k]!;
    cum += weights[i]!;
    const rel = (cum - total / 2) / total;
    if (Math.abs(rel) < 1e-12 && k + 1 < idx.length) return (xs[i]! + xs[idx[k + 1]!]!) / 2;
    if (cum > total / 2) return xs[i]!;
  }
  return xs[idx[idx.length - 1]!]!;
}

/** Tukey's biweight weight of a standardized residual z: (1 - z^2)^2 inside |z| < 1, else 0. */
export function biweight(z: number): number {
  return Math.abs(z) >= 1 ? 0 : (1 - z * z) ** 2;
}

/**
 * The 68.27th percentile of |x|: the half-width holding about 68 % of the values (1 sd under normality).
 * Sorted as a Float64Array (a numeric sort without a comparator: the run's drift sample has millions of values).
 */
export function q68(xs: ArrayLike<number>): number {
  if (xs.length === 0) return NaN;
  const s = new Float64Array(xs.length);
  for (let i = 0; i < xs.length; i++) s[i] = Math.abs(xs[i]!);
  s.sort();
  const pos = 0.6827 * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(s.length - 1, lo + 1);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

/**
 * Weighted 68.27th percentile of non-negative values: the smallest value whose cumulative weight (sorted
 * ascending) reaches 68.27 % of the total.
 */
export function weightedQ68(xs: readonly number[], weights: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const idx = xs.map((_, i) => i).sort((a, b) => xs[a]! - xs[b]!);
  const total = weights.reduce((s, w) => s + w, 0);
  let cum = 0;
  for (const i of idx) {
    cum += weights[i]!;
    if (cum >= 0.6827 * total - 1e-12) return xs[i]!;
  }
  return xs[idx[idx.length - 1]!]!;
}
