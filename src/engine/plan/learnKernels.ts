// The planned learning step's kernels (forward over whole sequences and its backward). Each is a
// .wgsl file under shaders/<operation>/ (learn*.wgsl) with its bindings declared here (PlanKernel)
// and at most a prelude of constants prepended; each dispatch's parameters sit in a static
// uniform record the planner fills once. One GEMM template does every product of the step:
// projections through frozen weights (f32, or f16 / int8 / int4 words decoded per element, never a
// dequantised matrix), LoRA's thin products, attention's batched products and the weight
// gradients, by strides alone. The rest is one thread per row or element and no barriers, except
// the vocabulary-wide token statistics (one workgroup per row).
import gemmCommonWgsl from '../../../shaders/matmul/learn_gemm_common.wgsl?raw';
import gemmF32Wgsl from '../../../shaders/matmul/learn_gemm.wgsl?raw';
import gemmTiledWgsl from '../../../shaders/matmul/learn_gemm_tiled.wgsl?raw';
import gemmTileLoopWgsl from '../../../shaders/matmul/gemm_tile_loop.wgsl?raw';
import gemmQuantWgsl from '../../../shaders/matmul/learn_gemm_quant.wgsl?raw';
import gemmBQuantWgsl from '../../../shaders/matmul/learn_gemm_b_quant.wgsl?raw';
import gemmPackedWgsl from '../../../shaders/matmul/learn_gemm_packed.wgsl?raw';
import rmsNormWgsl from '../../../shaders/rms-norm/learn.wgsl?raw';
import rmsNormGradWgsl from '../../../shaders/rms-norm/learn_grad.wgsl?raw';
import rmsNormResWgsl from '../../../shaders/rms-norm/learn_res.wgsl?raw';
import gegluWgsl from '../../../shaders/swiglu/learn_geglu.wgsl?raw';
import gegluGradWgsl from '../../../shaders/swiglu/learn_geglu_grad.wgsl?raw';
import headsWgsl from '../../../shaders/rope/learn_heads.wgsl?raw';
import softmaxWgsl from '../../../shaders/attention/learn_softmax.wgsl?raw';
import softmaxGradWgsl from '../../../shaders/attention/learn_softmax_grad.wgsl?raw';
import swigluWgsl from '../../../shaders/swiglu/learn.wgsl?raw';
import swigluGradWgsl from '../../../shaders/swiglu/learn_grad.wgsl?raw';
import dropMulWgsl from '../../../shaders/dropout/learn_mul.wgsl?raw';
import dropPackWgsl from '../../../shaders/dropout/learn_pack.wgsl?raw';
import embedWgsl from '../../../shaders/embed/learn.wgsl?raw';
import statsCommonWgsl from '../../../shaders/token-stats/learn_common.wgsl?raw';
import statsWgsl from '../../../shaders/token-stats/learn.wgsl?raw';
import statsGradWgsl from '../../../shaders/token-stats/learn_grad.wgsl?raw';
import type { BindingSpec, PlanKernel } from './kernel';
import type { WeightKind } from './decodeKernels';
import type { MlpActivation } from '../../contract/modelFamily';
import { GEMM_KT, GEMM_T, GEMM_TILE, GEMM_WG, gemmTilePrelude } from './gemmTile';
import { WEIGHTS_PER_WORD, weightDecodeWgsl } from '../kernels/matmul/weightDecode';

// ---------------------------------------------------------------------------------------------
// GEMM: C(m, n) = alpha sum_k A(m, k) B(k, n) [+ C(m, n)] [+ bias(n)] [+ R(m, n)], batched over z

/** Operand element (m, k) of batch z = (zb, zh), zb = z / Z1, zh = z % Z1, sits at
 * off + zb sb + (zh / div) sh + m sm + k sk (div folds GQA: query heads sharing a KV head). */
export interface Operand {
  off: number;
  /** Stride of the first index (m for A and C, k for B). */
  s0: number;
  /** Stride of the second index (k for A, n for B and C). */
  s1: number;
  sb?: number;
  sh?: number;
  div?: number;
}

export interface GemmUniform {
  M: number;
  N: number;
  K: number;
  /** Inner batch size (heads); z = zb Z1 + zh. Default 1. */
  Z1?: number;
  a: Operand;
  /** Ignored for a quantised weight (see wK, wT). */
  b: Operand;
  c: Operand;
  alpha?: number;
  /** Add the product to C's old value. */
  accumulate?: boolean;
  /** Element offset of a bias vector added along n; absent: none. */
  biasOff?: number;
  /** Add R(m, n) (same layout as C): a residual. */
  residual?: boolean;
  /** Quantised weight W [rows, wK]: B(k, n) = W[n, k] when wT (x W^T), else W[k, n]. */
  wK?: number;
  wT?: boolean;
}

export function packGemm(g: GemmUniform): ArrayBuffer {
  const buf = new ArrayBuffer(28 * 4);
  const u = new Uint32Array(buf);
  const f = new Float32Array(buf);
  const i = new Int32Array(buf);
  const op = (o: Operand, at: number) => u.set([o.off, o.s0, o.s1, o.sb ?? 0, o.sh ?? 0, o.div ?? 1], at);
  u.set([g.M, g.N, g.K, g.Z1 ?? 1]);
  op(g.a, 4);
  op(g.b, 10);
  op(g.c, 16);
  f[22] = g.alpha ?? 1;
  u[23] = g.accumulate ? 1 : 0;
  i[24] = g.biasOff ?? -1;
  u[25] = g.residual ? 1 : 0;
  u[26] = g.wK ?? 0;
  u[27] = g.wT ? 1 : 0;
  return buf;
}

export { GEMM_T, GEMM_WG, GEMM_TILE, GEMM_KT } from './gemmTile';

export function gemmWorkgroups(M: number, N: number, Z = 1): [number, number, number] {
  return [Math.ceil(N / GEMM_TILE), Math.ceil(M / GEMM_TILE), Z];
}

/**
 * The GEMM for B from a plain buffer ('buf', 'f32') or a quantised weight: decoded per element
 * (bAt), or by packed words where its groups hold whole words (no element decoded twice).
 */
/**
 * The learn GEMM's layouts: 'direct', each thread reads its 4 x 4 outputs' operands from memory
 * (learn_gemm.wgsl and the quantised variants; software adapters, where workgroup memory buys
 * nothing and a barrier is a thread switch); 'tiled', workgroup tiles in workgroup memory
 * (learn_gemm_tiled.wgsl; GPUs).
 */
export type GemmLayout = 'direct' | 'tiled';

const F32_B_AT = `fn bAt(base : u32, k : u32, n : u32) -> f32 {
  return Bm[base + k * U.bS0 + n * U.bS1];
}
`;

export function gemmKernel(kind: WeightKind | 'buf' = 'buf', groupSize = 0, layout: GemmLayout = 'direct'): PlanKernel {
  const quant = kind === 'int8' || kind === 'int4' || kind === 'f16';
  const b: BindingSpec[] = [
    { name: 'U', kind: 'uniform', type: 'Gemm' },
    { name: 'Am', kind: 'read', type: 'array<f32>' },
    { name: 'Bm', kind: 'read', type: quant ? 'array<i32>' : 'array<f32>' },
    { name: 'Cm', kind: 'rw', type: 'array<f32>' },
    { name: 'bias', kind: 'read', type: 'array<f32>' },
    { name: 'Rm', kind: 'read', type: 'array<f32>' },
  ];
  if (quant) b.push({ name: 'S', kind: 'read', type: 'array<f32>' });
  const packedLoops = quant && groupSize % WEIGHTS_PER_WORD[kind] === 0;
  const prelude = `const T : u32 = ${GEMM_T}u;\nconst WG : u32 = ${GEMM_WG}u;\n${quant ? `const GS : u32 = ${groupSize}u;\n` : ''}`;
  if (layout === 'tiled') {
    return {
      key: `learn_gemm_tiled_${quant ? `${kind}_g${groupSize}` : 'f32'}_kt${GEMM_KT}`,
      bindings: b,
      body: `${gemmTilePrelude(false)}${quant ? `const GS : u32 = ${groupSize}u;\n` : ''}${gemmCommonWgsl}${quant ? `${weightDecodeWgsl(kind)}${gemmBQuantWgsl}` : F32_B_AT}${gemmTileLoopWgsl}\n${gemmTiledWgsl}`,
    };
  }
  const variant = quant
    ? `${weightDecodeWgsl(kind)}${gemmBQuantWgsl}${packedLoops ? gemmPackedWgsl : gemmQuantWgsl}`
    : gemmF32Wgsl;
  return {
    key: `learn_gemm_${quant ? `${kind}_g${groupSize}${packedLoops ? '_packed' : ''}` : 'f32'}`,
    bindings: b,
    body: `${prelude}${gemmCommonWgsl}${variant}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Row and element kernels (one thread each, no barriers)

/** Threads per workgroup of the one-thread-per-item kernels, prepended to their .wgsl as WG. */
const WG1 = 64;
const FLAT_PRELUDE = `const WG : u32 = ${WG1}u;\n`;
export const elemWorkgroups = (n: number): [number, number, number] => {
  const groups = Math.ceil(n / WG1);
  // Past the per-dimension limit (65535) the grid folds into y; kernels rebuild the flat index.
  return groups <= 65535 ? [groups, 1, 1] : [65535, Math.ceil(groups / 65535), 1];
};
/** A one-thread-per-item kernel (its .wgsl folds a grid past 65535 workgroups back into one index). */
function flatKernel(key: string, uniform: string, bindings: BindingSpec[], body: string): PlanKernel {
  return {
    key,
    bindings: [{ name: 'U', kind: 'uniform', type: uniform }, ...bindings],
    body: `${FLAT_PRELUDE}${body}`,
  };
}

/** Row r of rows: y = x inv w, inv = (mean x^2 + eps)^-1/2 (kept for the backward). */
export function rmsNormKernel(): PlanKernel {
  return flatKernel(
    'learn_rms_fwd',
    'Row',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'W', kind: 'read', type: 'array<f32>' },
      { name: 'Y', kind: 'rw', type: 'array<f32>' },
      { name: 'Inv', kind: 'rw', type: 'array<f32>' },
    ],
    rmsNormWgsl,
  );
}

/** dX (+)= inv g - x inv^3 / H sum(g x), g = dY w. */
export function rmsNormGradKernel(): PlanKernel {
  return flatKernel(
    'learn_rms_bwd',
    'Row',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'W', kind: 'read', type: 'array<f32>' },
      { name: 'Inv', kind: 'read', type: 'array<f32>' },
      { name: 'DY', kind: 'read', type: 'array<f32>' },
      { name: 'DX', kind: 'rw', type: 'array<f32>' },
    ],
    rmsNormGradWgsl,
  );
}

export function packRow(rows: number, H: number, eps: number, accumulate: boolean): ArrayBuffer {
  const buf = new ArrayBuffer(16);
  new Uint32Array(buf).set([rows, H]);
  new Float32Array(buf)[2] = eps;
  new Uint32Array(buf)[3] = accumulate ? 1 : 0;
  return buf;
}

/**
 * Token-major [B L, n D] <-> head-major [B, n, L, D] with RoPE (sgn +1), its transpose (sgn -1) or
 * none (sgn 0). toHeads: read token-major, write head-major; else the other way. One thread per
 * (token, head, j < D / 2) rotates the pair (j, j + D / 2).
 */
export function headsKernel(): PlanKernel {
  return {
    key: 'learn_heads',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'Heads' },
      { name: 'Src', kind: 'read', type: 'array<f32>' },
      { name: 'Dst', kind: 'rw', type: 'array<f32>' },
      { name: 'Cos', kind: 'read', type: 'array<f32>' },
      { name: 'Sin', kind: 'read', type: 'array<f32>' },
    ],
    body: `${FLAT_PRELUDE}${headsWgsl}`,
  };
}

export function packHeads(tokens: number, L: number, n: number, D: number, toHeads: boolean, sgn: number): ArrayBuffer {
  const buf = new ArrayBuffer(32);
  new Uint32Array(buf).set([tokens, L, n, D, toHeads ? 1 : 0]);
  new Float32Array(buf)[5] = sgn;
  return buf;
}

/**
 * Attention probabilities in place over S [B, nH, L, L] (scores already scaled): key j is seen by
 * query i iff j <= i and j is a real token; masked scores get -1e9 as the tfjs path adds, so a row
 * with nothing to see is uniform there too.
 */
export function softmaxKernel(): PlanKernel {
  return flatKernel(
    'learn_softmax',
    'Sm',
    [
      { name: 'S', kind: 'rw', type: 'array<f32>' },
      { name: 'Valid', kind: 'read', type: 'array<f32>' },
    ],
    softmaxWgsl,
  );
}

/** dS = P (dP - sum_j P dP), in place over dP. */
export function softmaxGradKernel(): PlanKernel {
  return flatKernel(
    'learn_softmax_bwd',
    'Sm',
    [
      { name: 'P', kind: 'read', type: 'array<f32>' },
      { name: 'DP', kind: 'rw', type: 'array<f32>' },
    ],
    softmaxGradWgsl,
  );
}

/** `win` > 0: query i sees keys j > i - win only (a sliding-window layer); 0: every earlier key. */
export function packSm(rows: number, L: number, nH: number, win = 0): ArrayBuffer {
  return new Uint32Array([rows, L, nH, win]).buffer;
}

/** y = res + x inv w (a post-branch norm and its residual add), inv kept; its backward is rmsNormGradKernel's. */
export function rmsNormResKernel(): PlanKernel {
  return flatKernel(
    'learn_rms_res_fwd',
    'Row',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'W', kind: 'read', type: 'array<f32>' },
      { name: 'Res', kind: 'read', type: 'array<f32>' },
      { name: 'Y', kind: 'rw', type: 'array<f32>' },
      { name: 'Inv', kind: 'rw', type: 'array<f32>' },
    ],
    rmsNormResWgsl,
  );
}

/** act = silu(g) u, or gelu_tanh(g) u (GeGLU, Gemma 3). */
export function swigluKernel(act: MlpActivation = 'silu'): PlanKernel {
  return flatKernel(
    act === 'silu' ? 'learn_swiglu' : 'learn_geglu',
    'Cnt',
    [
      { name: 'G', kind: 'read', type: 'array<f32>' },
      { name: 'Up', kind: 'read', type: 'array<f32>' },
      { name: 'Act', kind: 'rw', type: 'array<f32>' },
    ],
    act === 'silu' ? swigluWgsl : gegluWgsl,
  );
}

/** dg = d u silu'(g), du = d silu(g); silu'(g) = sig(g) (1 + g (1 - sig(g))). */
export function swigluGradKernel(act: MlpActivation = 'silu'): PlanKernel {
  return flatKernel(
    act === 'silu' ? 'learn_swiglu_bwd' : 'learn_geglu_bwd',
    'Cnt',
    [
      { name: 'G', kind: 'read', type: 'array<f32>' },
      { name: 'Up', kind: 'read', type: 'array<f32>' },
      { name: 'DAct', kind: 'read', type: 'array<f32>' },
      { name: 'DG', kind: 'rw', type: 'array<f32>' },
      { name: 'DU', kind: 'rw', type: 'array<f32>' },
    ],
    act === 'silu' ? swigluGradWgsl : gegluGradWgsl,
  );
}

export const packCnt = (n: number): ArrayBuffer => new Uint32Array([n, 0, 0, 0]).buffer;

/**
 * LoRA dropout: Out = X M, or Out += X M (`acc`), M = Scale where the mask's bit is set, else 0
 * (the multiplier tf.dropout draws: 0 or 1 / (1 - p), its value kept in Scale by the packing).
 */
export function dropMulKernel(): PlanKernel {
  return flatKernel(
    'learn_drop_mul',
    'Cnt',
    [
      { name: 'X', kind: 'read', type: 'array<f32>' },
      { name: 'Bits', kind: 'read', type: 'array<u32>' },
      { name: 'Scale', kind: 'read', type: 'array<f32>' },
      { name: 'Out', kind: 'rw', type: 'array<f32>' },
    ],
    dropMulWgsl,
  );
}

/** A dropout multiplier [n] (0 or 1 / (1 - p)) packed to one bit per element, its nonzero value into Scale. */
export function dropPackKernel(): PlanKernel {
  return flatKernel(
    'learn_drop_pack',
    'Cnt',
    [
      { name: 'M', kind: 'read', type: 'array<f32>' },
      { name: 'Bits', kind: 'rw', type: 'array<u32>' },
      { name: 'Scale', kind: 'rw', type: 'array<f32>' },
    ],
    dropPackWgsl,
  );
}

export const packDrop = (n: number, accumulate: boolean): ArrayBuffer =>
  new Uint32Array([n, accumulate ? 1 : 0, 0, 0]).buffer;

/** x[t] = E[ids[t]] for the embedding rows [rowStart, rowStart + rowCount). */
export function embedRowsKernel(): PlanKernel {
  return flatKernel(
    'learn_embed',
    'Emb',
    [
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'E', kind: 'read', type: 'array<f32>' },
      { name: 'X', kind: 'rw', type: 'array<f32>' },
    ],
    embedWgsl,
  );
}

export const packEmb = (tokens: number, H: number, rowStart: number, rowCount: number, scale = 1): ArrayBuffer => {
  const buf = new ArrayBuffer(32);
  new Uint32Array(buf).set([tokens, H, rowStart, rowCount]);
  new Float32Array(buf)[4] = scale;
  return buf;
};

// ---------------------------------------------------------------------------------------------
// Token statistics and their backward (one workgroup per row of the logits)

export const STATS_WG = 64;
/** Floats per row of the statistics buffer: log-prob, entropy, reference log-prob, logsumexp. */
export const STATS_COLS = 4;

/** Prepended to the token-statistics kernels: their workgroup size and row width. */
const STATS_PRELUDE = `const WG : u32 = ${STATS_WG}u;\nconst COLS : u32 = ${STATS_COLS}u;\n${statsCommonWgsl}`;

/** z = logits / T: logp = z_id - lse, entropy = lse - sum p z (the reference pass writes column 2 only). */
export function statsKernel(): PlanKernel {
  return {
    key: 'learn_stats',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'St' },
      { name: 'Z', kind: 'read', type: 'array<f32>' },
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'Out', kind: 'rw', type: 'array<f32>' },
    ],
    body: `${STATS_PRELUDE}${statsWgsl}`,
  };
}

/** d logits = (dlogp (onehot - p) - dH p (log p + H)) / T. */
export function statsGradKernel(): PlanKernel {
  return {
    key: 'learn_stats_bwd',
    bindings: [
      { name: 'U', kind: 'uniform', type: 'St' },
      { name: 'Z', kind: 'read', type: 'array<f32>' },
      { name: 'Ids', kind: 'read', type: 'array<i32>' },
      { name: 'Stats', kind: 'read', type: 'array<f32>' },
      { name: 'DStats', kind: 'read', type: 'array<f32>' },
      { name: 'DZ', kind: 'rw', type: 'array<f32>' },
    ],
    body: `${STATS_PRELUDE}${statsGradWgsl}`,
  };
}

export function packSt(rows: number, V: number, ref: boolean, invT: number): ArrayBuffer {
  const buf = new ArrayBuffer(16);
  new Uint32Array(buf).set([rows, V, ref ? 1 : 0]);
  new Float32Array(buf)[3] = invT;
  return buf;
}
