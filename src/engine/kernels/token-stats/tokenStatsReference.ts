// Float64 reference for token statistics, in plain JS: the independent yardstick the WGSL kernel
// and the stock-op path are both checked against (in Node and in the browser).

export interface TokenStatsRows {
  logp: Float64Array;
  entropy: Float64Array;
}

export function tokenStatsF64(
  logits: ArrayLike<number>,
  rows: number,
  vocab: number,
  ids: ArrayLike<number>,
): TokenStatsRows {
  const logp = new Float64Array(rows);
  const entropy = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    const off = r * vocab;
    let m = -Infinity;
    for (let v = 0; v < vocab; v++) m = Math.max(m, logits[off + v]);
    let s = 0;
    for (let v = 0; v < vocab; v++) s += Math.exp(logits[off + v] - m);
    const lse = m + Math.log(s);
    let h = 0;
    for (let v = 0; v < vocab; v++) {
      const lp = logits[off + v] - lse;
      if (Number.isFinite(lp)) h -= Math.exp(lp) * lp;
    }
    logp[r] = logits[off + ids[r]] - lse;
    entropy[r] = h;
  }
  return { logp, entropy };
}

/**
 * d/d logits of sum_r (dy[r,0] logp[r] + dy[r,1] H[r]), from the closed forms
 * d logp/d x_j = [j = id] - p_j and d H/d x_j = -p_j (log p_j + H).
 */
export function tokenStatsGradF64(
  logits: ArrayLike<number>,
  rows: number,
  vocab: number,
  ids: ArrayLike<number>,
  dy: ArrayLike<number>,
): Float64Array {
  const { logp, entropy } = tokenStatsF64(logits, rows, vocab, ids);
  const grad = new Float64Array(rows * vocab);
  for (let r = 0; r < rows; r++) {
    const lse = logits[r * vocab + ids[r]] - logp[r];
    for (let v = 0; v < vocab; v++) {
      const lp = logits[r * vocab + v] - lse;
      if (!Number.isFinite(lp)) continue;
      const p = Math.exp(lp);
      grad[r * vocab + v] = dy[r * 2] * ((v === ids[r] ? 1 : 0) - p) - dy[r * 2 + 1] * p * (lp + entropy[r]);
    }
  }
  return grad;
}
