// Where rewards land on the token grid, and response-mask edits. All [B, T] on the CPU.
import { assertSameShape, tokenMatrix, type TokenMatrix } from './types';

/** Index of the last unmasked token of row b, or -1 if the row is all masked. */
export function lastValidIndex(mask: TokenMatrix, b: number): number {
  for (let t = mask.cols - 1; t >= 0; t--) if (mask.data[b * mask.cols + t] > 0) return t;
  return -1;
}

/**
 * Outcome reward placement (veRL reward managers, SaFeR-Steer): the scalar score of row b goes on
 * its last response token; every other entry is 0. A fully masked row gets no reward.
 * scores [B], mask [B, T] -> token_level_rewards [B, T].
 */
export function placeOutcomeRewards(scores: ArrayLike<number>, mask: TokenMatrix): TokenMatrix {
  if (scores.length !== mask.rows)
    throw new Error(`placeOutcomeRewards: ${scores.length} scores for ${mask.rows} rows`);
  const out = tokenMatrix(mask.rows, mask.cols);
  for (let b = 0; b < mask.rows; b++) {
    const t = lastValidIndex(mask, b);
    if (t >= 0) out.data[b * mask.cols + t] = scores[b];
  }
  return out;
}

/**
 * Turn reward placement for multi-turn episodes: `turnIndex` [B, T] holds the turn number k >= 0 of
 * each model-written token and -1 elsewhere (prompts, judge-written user turns, padding);
 * turnScores[b][k] lands on the last token of turn k in row b. A missing score (null / undefined /
 * NaN) places nothing, matching SaFeR-Steer which drops unscored turns.
 */
export function placeTurnRewards(
  turnScores: ArrayLike<number | null | undefined>[],
  turnIndex: TokenMatrix,
): TokenMatrix {
  if (turnScores.length !== turnIndex.rows) {
    throw new Error(`placeTurnRewards: ${turnScores.length} score rows for ${turnIndex.rows} rows`);
  }
  const T = turnIndex.cols;
  const out = tokenMatrix(turnIndex.rows, T);
  for (let b = 0; b < turnIndex.rows; b++) {
    const lastOfTurn = new Map<number, number>();
    for (let t = 0; t < T; t++) {
      const k = turnIndex.data[b * T + t];
      if (k >= 0) lastOfTurn.set(k, t);
    }
    for (const [k, t] of lastOfTurn) {
      const s = k < turnScores[b].length ? turnScores[b][k] : undefined;
      if (s !== null && s !== undefined && !Number.isNaN(s)) out.data[b * T + t] = s;
    }
  }
  return out;
}

/** The response mask of a multi-turn row: 1 where turnIndex >= 0. */
export function turnResponseMask(turnIndex: TokenMatrix): TokenMatrix {
  const out = tokenMatrix(turnIndex.rows, turnIndex.cols);
  for (let i = 0; i < out.data.length; i++) out.data[i] = turnIndex.data[i] >= 0 ? 1 : 0;
  return out;
}

/** Per-row sum of token rewards: veRL's `scores = token_level_rewards.sum(-1)`. [B, T] -> [B]. */
export function sequenceScores(tokenLevelRewards: TokenMatrix): Float32Array {
  const { rows, cols, data } = tokenLevelRewards;
  const out = new Float32Array(rows);
  for (let b = 0; b < rows; b++) {
    let s = 0;
    for (let t = 0; t < cols; t++) s += data[b * cols + t];
    out[b] = s;
  }
  return out;
}

/** Broadcast a per-sequence value over its response tokens: A[b, t] = a[b] m[b, t]. */
export function broadcastToTokens(perSeq: ArrayLike<number>, mask: TokenMatrix): TokenMatrix {
  if (perSeq.length !== mask.rows) throw new Error(`broadcastToTokens: ${perSeq.length} values for ${mask.rows} rows`);
  const out = tokenMatrix(mask.rows, mask.cols);
  for (let b = 0; b < mask.rows; b++) {
    for (let t = 0; t < mask.cols; t++) out.data[b * mask.cols + t] = perSeq[b] * mask.data[b * mask.cols + t];
  }
  return out;
}

/**
 * TRL `mask_truncated_completions`: a completion that never emitted EOS (cut at the length limit)
 * has its whole mask zeroed so it neither earns nor costs anything. endedWithEos [B].
 */
export function maskTruncatedCompletions(mask: TokenMatrix, endedWithEos: ArrayLike<boolean>): TokenMatrix {
  if (endedWithEos.length !== mask.rows)
    throw new Error(`maskTruncatedCompletions: ${endedWithEos.length} flags for ${mask.rows} rows`);
  return maskRows(mask, (b) => endedWithEos[b]);
}

/** Copy of mask with rows where keep(b) is false zeroed. */
export function maskRows(mask: TokenMatrix, keep: (b: number) => boolean): TokenMatrix {
  const out = tokenMatrix(mask.rows, mask.cols);
  for (let b = 0; b < mask.rows; b++) {
    if (!keep(b)) continue;
    out.data.set(mask.data.subarray(b * mask.cols, (b + 1) * mask.cols), b * mask.cols);
  }
  return out;
}

/** Elementwise product of two masks (e.g. response mask x positive-advantage mask). */
export function multiplyMasks(a: TokenMatrix, b: TokenMatrix): TokenMatrix {
  assertSameShape('multiplyMasks', a, b);
  const out = tokenMatrix(a.rows, a.cols);
  for (let i = 0; i < a.data.length; i++) out.data[i] = a.data[i] * b.data[i];
  return out;
}
