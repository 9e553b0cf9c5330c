// High-entropy token selection ("Beyond the 80/20 Rule", Wang et al. 2025; TRL GRPOConfig
// top_entropy_quantile): the policy-gradient term learns only from the tokens whose entropy is
// at or above the (1 - rho) quantile of the batch's response tokens, the "forking" tokens the
// paper found carry the gain (rho 0.2 in its runs). The rule is TRL's get_high_entropy_mask:
// torch.quantile (linear interpolation) over the non-pad entropies, entropy >= threshold, pad
// positions never kept; no non-pad token keeps nothing.
import type { TokenMatrix } from './types';

/** The q-quantile of `xs` (0 <= q <= 1) by linear interpolation between order statistics (torch.quantile's default). */
export function quantileLinear(xs: readonly number[], q: number): number {
  if (xs.length === 0) throw new Error('quantileLinear: no values');
  const s = [...xs].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

/**
 * 1 where a response token's entropy is at or above the `threshold` quantile of the batch's
 * response-token entropies (threshold = 1 - top_entropy_quantile), 0 elsewhere and on padding.
 * `entropy` and `mask` are [B, T].
 */
export function highEntropyMask(entropy: TokenMatrix, mask: TokenMatrix, threshold: number): TokenMatrix {
  if (entropy.rows !== mask.rows || entropy.cols !== mask.cols)
    throw new Error(`highEntropyMask: entropy [${entropy.rows}, ${entropy.cols}] vs mask [${mask.rows}, ${mask.cols}]`);
  const data = new Float32Array(mask.data.length);
  const live = Array.from(entropy.data).filter((_, i) => mask.data[i] > 0);
  if (live.length === 0) return { data, rows: mask.rows, cols: mask.cols };
  // The cut in float32, as the entropies are, so a token equal to it compares equal (TRL's tensors are float32).
  const cut = Math.fround(quantileLinear(live, threshold));
  for (let i = 0; i < data.length; i++) data[i] = mask.data[i] > 0 && entropy.data[i] >= cut ? 1 : 0;
  return { data, rows: mask.rows, cols: mask.cols };
}
