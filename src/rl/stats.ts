// Small statistics on plain arrays and masked [B, T] matrices (veRL torch_functional
// masked_mean / masked_var / masked_whiten), CPU only: these feed advantages, never gradients.
import { assertSameShape, tokenMatrix, type TokenMatrix } from './types';

/** Arithmetic mean; 0 for an empty array (no NaN leaks into reports). */
export function mean(xs: ArrayLike<number>): number {
  if (xs.length === 0) return 0;
  let s = 0;
  for (let i = 0; i < xs.length; i++) s += xs[i];
  return s / xs.length;
}

/**
 * Standard deviation. `unbiased` (default, Bessel, as torch.std) divides by n - 1.
 * Returns 0 when there are too few values to define it (n < 2 unbiased, n < 1 biased).
 */
export function std(xs: ArrayLike<number>, unbiased = true): number {
  const n = xs.length;
  const d = unbiased ? n - 1 : n;
  if (d <= 0) return 0;
  const m = mean(xs);
  let s = 0;
  for (let i = 0; i < n; i++) s += (xs[i] - m) ** 2;
  return Math.sqrt(s / d);
}

/** sum(x m) / sum(m); 0 when the mask is empty. */
export function maskedMean(x: TokenMatrix, mask: TokenMatrix): number {
  assertSameShape('maskedMean', x, mask);
  let s = 0;
  let n = 0;
  for (let i = 0; i < x.data.length; i++) {
    s += x.data[i] * mask.data[i];
    n += mask.data[i];
  }
  return n > 0 ? s / n : 0;
}

/**
 * Per-row masked mean: (sum_t x m) / (sum_t m), 0 for an empty row. [B, T] -> [B].
 * Mean response entropy (Token Buncher, MTSA) and the red-team trainer's sequence KL
 * (mean over sampled tokens of logp_sampler - logp_base) are both this.
 */
export function maskedRowMeans(x: TokenMatrix, mask: TokenMatrix): Float32Array {
  assertSameShape('maskedRowMeans', x, mask);
  const out = new Float32Array(mask.rows);
  for (let b = 0; b < mask.rows; b++) {
    let s = 0;
    let n = 0;
    for (let t = 0; t < mask.cols; t++) {
      const i = b * mask.cols + t;
      s += x.data[i] * mask.data[i];
      n += mask.data[i];
    }
    out[b] = n > 0 ? s / n : 0;
  }
  return out;
}

/**
 * Masked variance, Bessel-corrected by n / (n - 1) as veRL `masked_var(unbiased=True)`.
 * veRL raises for n <= 1; here n = 1 gives the uncorrected 0 and n = 0 gives 0, so an
 * all-masked batch whitens to zeros instead of crashing a run.
 */
export function maskedVar(x: TokenMatrix, mask: TokenMatrix, unbiased = true): number {
  const m = maskedMean(x, mask);
  let s = 0;
  let n = 0;
  for (let i = 0; i < x.data.length; i++) {
    s += (x.data[i] - m) ** 2 * mask.data[i];
    n += mask.data[i];
  }
  if (n === 0) return 0;
  const v = s / n;
  return unbiased && n > 1 ? (v * n) / (n - 1) : v;
}

/**
 * veRL `masked_whiten(values, mask, shift_mean=True)`: (x - mean) / sqrt(var + 1e-8), statistics
 * over unmasked entries of the whole batch. Masked entries come out 0 (veRL multiplies by the
 * mask afterwards for REINFORCE++; doing it always keeps padding inert). Shape [B, T].
 */
export function maskedWhiten(x: TokenMatrix, mask: TokenMatrix, eps = 1e-8): TokenMatrix {
  const m = maskedMean(x, mask);
  const inv = 1 / Math.sqrt(maskedVar(x, mask) + eps);
  const out = tokenMatrix(x.rows, x.cols);
  for (let i = 0; i < x.data.length; i++) out.data[i] = (x.data[i] - m) * inv * mask.data[i];
  return out;
}

/**
 * Per-batch z-score (x - mean) / (std + eps), Bessel std. Red-team trainer (Tinker) logs this;
 * the lab offers it as an opt-in reward transform. Identical values give zeros, not NaN.
 */
export function zScore(xs: ArrayLike<number>, eps = 1e-8, unbiased = true): number[] {
  const m = mean(xs);
  const s = std(xs, unbiased);
  return Array.from(xs, (x) => (x - m) / (s + eps));
}
