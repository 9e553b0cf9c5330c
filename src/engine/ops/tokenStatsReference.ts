// Float64 reference for token statistics, in plain JS: the independent yardstick the WGSL kernel
// and the stock-op path are both checked against (in Node and in the browser).

export interface TokenStatsRows {
  logp: Float64Array;
  entropy: Float64Array;
}

export function tokenStatsF64(logits: ArrayLike<number>, rows: number, vocab: number, ids: ArrayLike<number>): TokenStatsRows {
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
