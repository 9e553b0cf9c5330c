// Row surgery on generation results, for dynamic sampling (rl/dynamicSampling.ts): several
// generation batches joined into one (each padded to the longest), and a subset of rows kept.
import type { GenerateResult } from '../../model/generate';
import type { TokenMatrix } from '../../rl/types';

/** Prompts, the generation and its decoded texts: one sampled batch of a recipe. */
export interface GenRows {
  rows: number[][];
  gen: GenerateResult;
  texts: string[];
}

const padTo = (row: number[], T: number, fill: number) =>
  row.length >= T ? row : [...row, ...Array<number>(T - row.length).fill(fill)];

/** Batches joined row-wise; every [B][T] field padded to the longest T (tokens with `pad`, the rest with 0). */
export function concatGenRows(parts: readonly GenRows[], pad: number): GenRows {
  if (parts.length === 0) throw new Error('concatGenRows: no batches');
  if (parts.length === 1) return parts[0];
  const T = Math.max(...parts.map((p) => Math.max(0, ...p.gen.tokens.map((r) => r.length))));
  const all = <K extends 'tokens' | 'logprobs' | 'entropy' | 'mask'>(k: K, fill: number) =>
    parts.flatMap((p) => p.gen[k].map((r) => padTo(r, T, fill)));
  return {
    rows: parts.flatMap((p) => p.rows),
    texts: parts.flatMap((p) => p.texts),
    gen: {
      tokens: all('tokens', pad),
      logprobs: all('logprobs', 0),
      entropy: all('entropy', 0),
      mask: all('mask', 0),
      lengths: parts.flatMap((p) => p.gen.lengths),
    },
  };
}

/** The rows `keep` (indices, in that order) of a batch. */
export function selectGenRows(g: GenRows, keep: readonly number[]): GenRows {
  const pick = <T>(xs: readonly T[]) => keep.map((i) => xs[i]);
  return {
    rows: pick(g.rows),
    texts: pick(g.texts),
    gen: {
      tokens: pick(g.gen.tokens),
      logprobs: pick(g.gen.logprobs),
      entropy: pick(g.gen.entropy),
      mask: pick(g.gen.mask),
      lengths: pick(g.gen.lengths),
    },
  };
}

/** The rows `keep` of a [B, T] matrix. */
export function selectMatrixRows(m: TokenMatrix, keep: readonly number[]): TokenMatrix {
  const data = new Float32Array(keep.length * m.cols);
  keep.forEach((b, i) => data.set(m.data.subarray(b * m.cols, (b + 1) * m.cols), i * m.cols));
  return { data, rows: keep.length, cols: m.cols };
}
