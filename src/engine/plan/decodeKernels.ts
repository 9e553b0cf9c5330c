// The planned decode step's kernels: WGSL sources from shaders/ with the declarations each
// variant needs (weight format, epilogue mode), and the uniform records the planner fills.
// The sampler and token statistics reuse the tfjs path's kernel bodies unchanged (sample/op.wgsl,
// token-stats/op.wgsl) under a header that gives them the names tfjs would, so both paths draw the
// same tokens from the same Philox streams.
import gemvWgsl from '../../../shaders/matmul/plan_gemv.wgsl?raw';
import gemvThreadWgsl from '../../../shaders/matmul/plan_gemv_thread.wgsl?raw';
import gemvUnitWgsl from '../../../shaders/matmul/plan_gemv_unit.wgsl?raw';
import gemmTileWgsl from '../../../shaders/matmul/plan_gemm_tile.wgsl?raw';
import gemmTiledWgsl from '../../../shaders/matmul/plan_gemm_tiled.wgsl?raw';
import gemmTileLoopWgsl from '../../../shaders/matmul/gemm_tile_loop.wgsl?raw';
import gemvRowsWgsl from '../../../shaders/matmul/plan_gemv_rows.wgsl?raw';
import loraDeltaWgsl from '../../../shaders/lora/plan_delta.wgsl?raw';
import attentionWgsl from '../../../shaders/attention/plan.wgsl?raw';
import attentionThreadWgsl from '../../../shaders/attention/plan_thread.wgsl?raw';
import attentionSplitKWgsl from '../../../shaders/attention/plan_splitk.wgsl?raw';
import attentionCombineWgsl from '../../../shaders/attention/plan_combine.wgsl?raw';
import embedWgsl from '../../../shaders/embed/plan.wgsl?raw';
import headNormWgsl from '../../../shaders/rope/plan_head_norm.wgsl?raw';
import normAddWgsl from '../../../shaders/rms-norm/plan_add.wgsl?raw';
import sampleWgsl from '../../../shaders/sample/op.wgsl?raw';
import tokenStatsWgsl from '../../../shaders/token-stats/op.wgsl?raw';
import rowReduceTreeWgsl from '../../../shaders/row-reduce/tree.wgsl?raw';
import { rowReduce } from '../kernels/row-reduce/rowReduce';
import { rowWorkgroupSize } from '../webgpu/limits';
import type { BindingSpec, PlanKernel } from './kernel';
import type { GemvShape } from '../options';
import type { MlpActivation } from '../../contract/modelFamily';
import type { WeightKind } from '../../contract/weightFormat';
import { GEMM_TILE, gemmTilePrelude } from './gemmTile';
import { weightDecodeWgsl } from '../kernels/matmul/weightDecode';

/** The weight kinds the kernels decode (contract/weightFormat.ts); f16: halves packed two per i32 word (first in the low 16 bits) with a unit scale per row. */
export type { WeightKind };

/** The per-token uniform (one 256-byte slot per token of a run); field names are the tfjs kernels'. */
export const TOK_STRUCT = `struct Tok {
  NAN : f32, INFINITY : f32, logitsShape : vec2<i32>,
  temperature : f32, topK : i32, topP : f32, seedLo : u32,
  seedHi : u32, step : u32, slot : u32, loraOn : u32,
  kvLen : u32, rec : u32, statT : f32, pad0 : u32,
}`;

export interface TokValues {
  vocab: number;
  temperature: number;
  topK: number;
  topP: number;
  seedLo: number;
  seedHi: number;
  step: number;
  slot: number;
  loraOn: boolean;
  kvLen: number;
  rec: number;
  /** Token statistics are taken under logits / statT. */
  statT: number;
}

export function packTok(v: TokValues, into: ArrayBuffer, byteOffset: number): void {
  const f = new Float32Array(into, byteOffset, 16);
  const i = new Int32Array(into, byteOffset, 16);
  const u = new Uint32Array(into, byteOffset, 16);
  f[0] = NaN;
  f[1] = Infinity;
  i[2] = 1;
  i[3] = v.vocab;
  f[4] = v.temperature;
  i[5] = v.topK;
  f[6] = v.topP;
  u[7] = v.seedLo;
  u[8] = v.seedHi;
  u[9] = v.step;
  u[10] = v.slot;
  u[11] = v.loraOn ? 1 : 0;
  u[12] = v.kvLen;
  u[13] = v.rec;
  f[14] = v.statT;
}

const TOK: BindingSpec = { name: 'tok', kind: 'dyn', type: 'Tok' };

// ---------------------------------------------------------------------------------------------
// Projections

export const GEMV_WG = 64;
/**
 * Rows of x one workgroup multiplies (grid y walks blocks of this many): every block streams the
 * weights again, so the one-thread layout, with no workgroup memory to bound it, takes 16.
 */
export function gemvMaxRows(shape: GemvLayout): number {
  if (shape === 'gemm') return GEMM_TILE;
  return shape === 'tile' ? 4 * TILE_TQ : shape === 'thread' ? 16 : 8;
}

/**
 * The tiled layout's units per thread and quads of rows per thread: matmul/plan_gemm_tile.wgsl
 * keeps its sums in named registers written out for these values (a CPU driver keeps only
 * constant-indexed values out of memory), so a change here is a change of that file.
 */
export const TILE_TU = 4;
export const TILE_TQ = 1;

export const GEMV_R = 4;

export const enum GemvMode {
  Plain = 0,
  RopeQ = 1,
  RopeK = 2,
  CacheV = 3,
  GateUp = 4,
  Head = 5,
}

const GEMV_STRUCT = `struct Gemv {
  K : u32, N : u32, rows : u32, xOff : u32,
  xStride : u32, normOff : i32, biasOff : i32, outOff : u32,
  outStride : u32, tOff : i32, tStride : u32, bOff : u32,
  r : u32, scale : f32, eps : f32, headDim : u32,
  nKV : u32, cap : u32, cosOff : u32, sinOff : u32,
  posOff : u32, resid : u32, bias2Off : i32, t2Off : i32,
  b2Off : u32, r2 : u32, scale2 : f32, seq : u32,
}`;

export interface GemvUniform {
  K: number;
  N: number;
  rows: number;
  xOff: number;
  xStride: number;
  normOff?: number;
  biasOff?: number;
  outOff: number;
  outStride: number;
  tOff?: number;
  tStride?: number;
  bOff?: number;
  r?: number;
  scale?: number;
  eps?: number;
  headDim?: number;
  nKV?: number;
  cap?: number;
  cosOff?: number;
  sinOff?: number;
  posOff?: number;
  resid?: boolean;
  bias2Off?: number;
  t2Off?: number;
  b2Off?: number;
  r2?: number;
  scale2?: number;
  /** Prefill: prompt columns per batch row (rows = B x seq); 0 for a decode step. */
  seq?: number;
}

export function packGemv(g: GemvUniform): ArrayBuffer {
  const buf = new ArrayBuffer(28 * 4);
  const u = new Uint32Array(buf);
  const i = new Int32Array(buf);
  const f = new Float32Array(buf);
  u[0] = g.K;
  u[1] = g.N;
  u[2] = g.rows;
  u[3] = g.xOff;
  u[4] = g.xStride;
  i[5] = g.normOff ?? -1;
  i[6] = g.biasOff ?? -1;
  u[7] = g.outOff;
  u[8] = g.outStride;
  i[9] = g.tOff ?? -1;
  u[10] = g.tStride ?? 0;
  u[11] = g.bOff ?? 0;
  u[12] = g.r ?? 0;
  f[13] = g.scale ?? 0;
  f[14] = g.eps ?? 0;
  u[15] = g.headDim ?? 0;
  u[16] = g.nKV ?? 0;
  u[17] = g.cap ?? 0;
  u[18] = g.cosOff ?? 0;
  u[19] = g.sinOff ?? 0;
  u[20] = g.posOff ?? 0;
  u[21] = g.resid ? 1 : 0;
  i[22] = g.bias2Off ?? -1;
  i[23] = g.t2Off ?? -1;
  u[24] = g.b2Off ?? 0;
  u[25] = g.r2 ?? 0;
  f[26] = g.scale2 ?? 0;
  u[27] = g.seq ?? 0;
  return buf;
}

/** `fn <name>(o, c) -> vec4<f32>`: W[o, 4c .. 4c+3] as float32 from binding `w` (and scales `s`). */
function weightLoader(name: string, format: WeightKind, w: string, s: string, groupSize: number, vec4 = false): string {
  if (format === 'f32' && vec4) {
    return `fn ${name}(o : u32, c : u32) -> vec4<f32> {
  return ${w}[o * (G.K / 4u) + c];
}`;
  }
  if (format === 'f32') {
    return `fn ${name}(o : u32, c : u32) -> vec4<f32> {
  let k = c * 4u;
  let base = o * G.K + k;
  if (k + 3u < G.K) {
    return vec4<f32>(${w}[base], ${w}[base + 1u], ${w}[base + 2u], ${w}[base + 3u]);
  }
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < G.K) {
      v[i] = ${w}[base + i];
    }
  }
  return v;
}`;
  }
  // A packed format: four consecutive weights from the format's decode (weight_decode_<kind>.wgsl,
  // included once per kernel), rows padded to whole words. f16 runs over two words; past the row's
  // last word lies the next row (or the buffer's end), so that word is read only inside the row.
  const unscaled = `fn ${name}(o : u32, c : u32) -> vec4<f32> {
  let k = c * 4u;
  let at = o * ((G.K + WPW - 1u) / WPW) + k / WPW;
  var hi = 0;
  if (WPW < 4u && k + 2u < G.K) {
    hi = ${w}[at + 1u];
  }
  let q = weightRun4(${w}[at], hi, k % WPW);`;
  if (format === 'f16') return `${unscaled}\n  return q;\n}`;
  // Scales: one per group of GS inputs along the row; nG = K / GS groups per output row. A group
  // of a multiple of 4 inputs holds whole chunks: one scale (and one division) per chunk; rows are
  // zero-padded, so lanes past K decode to 0.
  if (groupSize % 4 === 0) return `${unscaled}\n  return q * ${s}[o * (G.K / ${groupSize}u) + k / ${groupSize}u];\n}`;
  return `${unscaled}
  var v = vec4<f32>(0.0);
  for (var i = 0u; i < 4u; i++) {
    if (k + i < G.K) {
      v[i] = q[i] * ${s}[o * (G.K / ${groupSize}u) + (k + i) / ${groupSize}u];
    }
  }
  return v;
}`;
}

/** `fn <name>(o, k) -> f32`: W[o, k] as float32, one element (the tiled GEMM's tile loads). */
function weightScalar(name: string, format: WeightKind, w: string, s: string, groupSize: number): string {
  const word = `${w}[o * ((G.K + WPW - 1u) / WPW) + k / WPW]`;
  const body =
    format === 'f32'
      ? `return ${w}[o * G.K + k];`
      : format === 'f16'
        ? `return weightAt(${word}, k % WPW);`
        : `return weightAt(${word}, k % WPW) * ${s}[o * (G.K / ${groupSize}u) + k / ${groupSize}u];`;
  return `fn ${name}(o : u32, k : u32) -> f32 {\n  ${body}\n}`;
}

/**
 * GemvShape: 'split': R outputs per workgroup, threads split the input and merge once (GPUs);
 * 'thread': one thread per output unit and no barrier (software adapters, where a barrier is a
 * thread switch). Defined with the engine options, which name it.
 */
export type { GemvShape };
/**
 * A kernel's layout: a GemvShape, 'tile' (software adapters, many rows: 4 units x 4 rows per
 * thread), or 'gemm' (GPUs, many rows: 32 x 32 workgroup tiles, matmul/plan_gemm_tiled.wgsl).
 */
export type GemvLayout = GemvShape | 'tile' | 'gemm';

export interface GemvKernelSpec {
  shape: GemvLayout;
  mode: GemvMode;
  kind: WeightKind;
  /** Input features per scale (int8 / int4; f16 ignores it). */
  groupSize?: number;
  /** RMSNorm of the input fused in (its weight at G.normOff in params). */
  norm: boolean;
  /** GATEUP's gate activation: SiLU (default) or tanh GELU (Gemma 3's GeGLU, swiglu/op_geglu.wgsl's formula). */
  act?: MlpActivation;
}

/** `fn gateAct(g) -> f32` of the GATEUP epilogue. */
function gateActFn(act: MlpActivation = 'silu'): string {
  const body =
    act === 'silu'
      ? 'return g / (1.0 + exp(-g));'
      : 'let t = tanh(clamp(0.7978845608028654 * (g + 0.044715 * g * g * g), -15.0, 15.0));\n  return 0.5 * g * (1.0 + t);';
  return `fn gateAct(g : f32) -> f32 {\n  ${body}\n}`;
}

/** Workgroups along x for `n` outputs. */
export function gemvWorkgroupsX(shape: GemvLayout, mode: GemvMode, n: number, headDim = 0): number {
  if (shape === 'gemm') {
    // tile columns: one per unit, or 4 per two units of the pair modes (plan_gemm_tiled.wgsl)
    const units = mode === GemvMode.RopeQ || mode === GemvMode.RopeK ? n / 2 : n;
    const pairs = mode === GemvMode.RopeQ || mode === GemvMode.RopeK || mode === GemvMode.GateUp;
    return Math.ceil((pairs ? Math.ceil(units / 2) * 4 : units) / GEMM_TILE);
  }
  if (shape === 'tile')
    return Math.ceil((mode === GemvMode.RopeQ || mode === GemvMode.RopeK ? n / 2 : n) / TILE_TU / GEMV_WG);
  if (shape === 'thread') return Math.ceil((mode === GemvMode.RopeQ || mode === GemvMode.RopeK ? n / 2 : n) / GEMV_WG);
  if (mode === GemvMode.RopeQ || mode === GemvMode.RopeK) return (n / headDim) * (headDim / 4);
  if (mode === GemvMode.GateUp) return Math.ceil(n / (GEMV_R / 2));
  return Math.ceil(n / GEMV_R);
}

export function gemvKernel(v: GemvKernelSpec): PlanKernel {
  const quant = v.kind !== 'f32';
  // The tiled layout reads work and f32 weights as vec4 arrays (its rows are 4-aligned).
  const vec4 = v.shape === 'tile';
  const wType = quant ? 'array<i32>' : vec4 ? 'array<vec4<f32>>' : 'array<f32>';
  const gs = v.groupSize ?? 0;
  const b: BindingSpec[] = [
    { name: 'G', kind: 'uniform', type: 'Gemv' },
    TOK,
    { name: 'work', kind: 'rw', type: vec4 ? 'array<vec4<f32>>' : 'array<f32>' },
    { name: 'params', kind: 'read', type: 'array<f32>' },
    { name: 'lora', kind: 'read', type: 'array<f32>' },
    { name: 'W', kind: 'read', type: wType },
  ];
  if (quant) b.push({ name: 'S', kind: 'read', type: 'array<f32>' });
  const gemm = v.shape === 'gemm';
  const loader = (name: string, w: string, sc: string) =>
    gemm ? weightScalar(name.replace('wload', 'wat'), v.kind, w, sc, gs) : weightLoader(name, v.kind, w, sc, gs, vec4);
  const fns = [
    gateActFn(v.act),
    ...(v.kind === 'f32' ? [] : [weightDecodeWgsl(v.kind)]),
    loader('wload', 'W', 'S'),
    vec4
      ? 'fn wget(i : u32) -> f32 {\n  return work[i / 4u][i % 4u];\n}\nfn wput(i : u32, y : f32) {\n  work[i / 4u][i % 4u] = y;\n}'
      : 'fn wget(i : u32) -> f32 {\n  return work[i];\n}\nfn wput(i : u32, y : f32) {\n  work[i] = y;\n}',
  ];
  if (v.mode === GemvMode.GateUp) {
    b.push({ name: 'W2', kind: 'read', type: wType });
    if (quant) b.push({ name: 'S2', kind: 'read', type: 'array<f32>' });
    fns.push(loader('wload2', 'W2', 'S2'));
  } else if (gemm) {
    fns.push('fn wat2(o : u32, k : u32) -> f32 {\n  return 0.0;\n}');
  } else {
    fns.push('fn wload2(o : u32, c : u32) -> vec4<f32> {\n  return vec4<f32>(0.0);\n}');
  }
  if (v.mode === GemvMode.RopeQ || v.mode === GemvMode.RopeK) {
    b.push({ name: 'aux', kind: 'read', type: 'array<f32>' });
    fns.push('fn auxAt(i : u32) -> f32 {\n  return aux[i];\n}');
  } else {
    fns.push('fn auxAt(i : u32) -> f32 {\n  return 0.0;\n}');
  }
  if (v.mode === GemvMode.RopeK || v.mode === GemvMode.CacheV) {
    b.push({ name: 'cache', kind: 'rw', type: 'array<f32>' });
    fns.push('fn cacheStore(i : u32, y : f32) {\n  cache[i] = y;\n}');
  } else {
    fns.push('fn cacheStore(i : u32, y : f32) {\n}');
  }
  if (v.mode === GemvMode.Head) {
    b.push(
      { name: 'logitsOut', kind: 'rw', type: 'array<f32>' },
      { name: 'scaledOut', kind: 'rw', type: 'array<f32>' },
    );
    fns.push('fn headStore(i : u32, y : f32, scaled : f32) {\n  logitsOut[i] = y;\n  scaledOut[i] = scaled;\n}');
  } else {
    fns.push('fn headStore(i : u32, y : f32, scaled : f32) {\n}');
  }
  const actKey = v.mode === GemvMode.GateUp && v.act && v.act !== 'silu' ? `_${v.act}` : '';
  // GateUp keeps two matrices' sums per output column: half the columns per workgroup.
  if (gemm) {
    const consts = `${gemmTilePrelude(true)}const MODE : u32 = ${v.mode}u;\nconst NORM : bool = ${v.norm};`;
    return {
      key: `plan_gemm_tiled_m${v.mode}_${v.kind}${quant && v.kind !== 'f16' ? `_g${gs}` : ''}_n${v.norm ? 1 : 0}${actKey}`,
      bindings: b,
      body: `${consts}\n${GEMV_STRUCT}\n${TOK_STRUCT}\n${fns.join('\n')}\n${gemvRowsWgsl}\n${loraDeltaWgsl}\n${gemvUnitWgsl}\n${gemmTileLoopWgsl}\n${gemmTiledWgsl}`,
    };
  }
  const consts = `const TU : u32 = ${TILE_TU}u;\nconst TQ : u32 = ${TILE_TQ}u;\nconst WG : u32 = ${GEMV_WG}u;\nconst R : u32 = ${GEMV_R}u;\nconst MAXB : u32 = ${gemvMaxRows(v.shape)}u;\nconst MODE : u32 = ${v.mode}u;\nconst NORM : bool = ${v.norm};`;
  return {
    key: `plan_gemv_${v.shape}_m${v.mode}_${v.kind}${quant && v.kind !== 'f16' ? `_g${gs}` : ''}_n${v.norm ? 1 : 0}${actKey}`,
    bindings: b,
    body: `${consts}\n${GEMV_STRUCT}\n${TOK_STRUCT}\n${fns.join('\n')}\n${gemvRowsWgsl}\n${loraDeltaWgsl}\n${v.shape === 'split' ? gemvWgsl : `${gemvUnitWgsl}\n${v.shape === 'tile' ? gemmTileWgsl : gemvThreadWgsl}`}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Attention, embedding, sampling, statistics

const ATT_STRUCT = `struct Att {
  nH : u32, nKV : u32, D : u32, cap : u32,
  qOff : u32, aOff : u32, validOff : u32, scale : f32,
  seq : u32, rows : u32, win : u32, pad2 : u32,
}`;

/**
 * `seq` > 0: a prefill chunk, query row = b * seq + j at slot tok.slot + j (causal); 0: a decode step.
 * `rows`: query rows (the one-thread attention bounds its grid by it). `scale` multiplies q.k
 * (default head_dim^-1/2); `window` > 0: a query at slot s sees slots > s - window only.
 */
export function packAtt(a: {
  nH: number;
  nKV: number;
  D: number;
  cap: number;
  qOff: number;
  aOff: number;
  validOff: number;
  seq?: number;
  rows?: number;
  scale?: number;
  window?: number | null;
}): ArrayBuffer {
  const buf = new ArrayBuffer(48);
  const win = a.window ?? 0;
  new Uint32Array(buf).set([a.nH, a.nKV, a.D, a.cap, a.qOff, a.aOff, a.validOff, 0, a.seq ?? 0, a.rows ?? 0, win]);
  new Float32Array(buf)[7] = a.scale ?? 1 / Math.sqrt(a.D);
  return buf;
}

export function attentionWorkgroupSize(headDim: number): number {
  let wg = 64;
  while (wg < headDim) wg *= 2;
  return wg;
}

export function attentionKernel(headDim: number): PlanKernel {
  const WG = attentionWorkgroupSize(headDim);
  return {
    key: `plan_attention_wg${WG}`,
    bindings: [
      { name: 'A', kind: 'uniform', type: 'Att' },
      TOK,
      { name: 'work', kind: 'rw', type: 'array<f32>' },
      { name: 'aux', kind: 'read', type: 'array<f32>' },
      { name: 'kc', kind: 'read', type: 'array<f32>' },
      { name: 'vc', kind: 'read', type: 'array<f32>' },
    ],
    body: `const WG : u32 = ${WG}u;\nconst SCH : u32 = 256u;\nconst MAXD : u32 = ${WG}u;\n${ATT_STRUCT}\n${TOK_STRUCT}\n${attentionWgsl}`,
  };
}

/** Query threads per workgroup of the one-thread attention. */
export const ATT_THREAD_WG = 64;

/** The barrier-free attention for software adapters (attention/plan_thread.wgsl), unrolled for head_dim D. */
export function attentionThreadKernel(headDim: number): PlanKernel {
  const idx = Array.from({ length: headDim / 4 }, (_, i) => i);
  const lanes = (f: (j: number) => string) => [0, 1, 2, 3].map(f);
  // The prelude: D/4 private vec4 registers each for the query and the accumulator, and the four
  // helpers the body calls, each unrolled over them (a CPU driver keeps only constant-indexed
  // values in registers); the body itself is never edited.
  const registers = [
    ...idx.map((i) => `var<private> q${i} : vec4<f32>;`),
    ...idx.map((i) => `var<private> o${i} : vec4<f32>;`),
    `fn qLoad(qb : u32) {\n${idx.map((i) => `  q${i} = vec4<f32>(${lanes((j) => `work[qb + ${4 * i + j}u]`).join(', ')});`).join('\n')}\n}`,
    `fn qDotK(at : u32) -> f32 {\n  return ${idx.map((i) => `dot(q${i}, kc[at + ${i}u])`).join(' + ')};\n}`,
    `fn accUpdate(at : u32, alpha : f32, p : f32) {\n${idx.map((i) => `  o${i} = o${i} * alpha + p * vc[at + ${i}u];`).join('\n')}\n}`,
    `fn accStore(ob : u32, inv : f32) {\n${idx.map((i) => lanes((j) => `  work[ob + ${4 * i + j}u] = o${i}[${j}] * inv;`).join('\n')).join('\n')}\n}`,
  ].join('\n');
  return {
    key: `plan_attention_thread_d${headDim}`,
    bindings: [
      { name: 'A', kind: 'uniform', type: 'Att' },
      TOK,
      { name: 'work', kind: 'rw', type: 'array<f32>' },
      { name: 'aux', kind: 'read', type: 'array<f32>' },
      { name: 'kc', kind: 'read', type: 'array<vec4<f32>>' },
      { name: 'vc', kind: 'read', type: 'array<vec4<f32>>' },
    ],
    body: `const WG : u32 = ${ATT_THREAD_WG}u;\n${ATT_STRUCT}\n${TOK_STRUCT}\n${registers}\n${attentionThreadWgsl}`,
  };
}

/** Cache slots per segment of the split-K attention (one 256-slot chunk, as attention/plan.wgsl's). */
export const SPLITK_SEGMENT = 256;

/** Floats of the split-K partials for `rows` query rows: per (row, head, segment) m, l and D sums. */
export function splitKPartialFloats(rows: number, heads: number, headDim: number, capacity: number): number {
  return rows * heads * Math.ceil(capacity / SPLITK_SEGMENT) * (headDim + 2);
}

/** Split-K decode attention, pass 1 (attention/plan_splitk.wgsl): grid [heads, rows, segments]. */
export function attentionSplitKKernel(headDim: number): PlanKernel {
  const WG = attentionWorkgroupSize(headDim);
  return {
    key: `plan_attention_splitk_wg${WG}_s${SPLITK_SEGMENT}`,
    bindings: [
      { name: 'A', kind: 'uniform', type: 'Att' },
      TOK,
      { name: 'work', kind: 'read', type: 'array<f32>' },
      { name: 'aux', kind: 'read', type: 'array<f32>' },
      { name: 'kc', kind: 'read', type: 'array<f32>' },
      { name: 'vc', kind: 'read', type: 'array<f32>' },
      { name: 'part', kind: 'rw', type: 'array<f32>' },
    ],
    body: `const WG : u32 = ${WG}u;\nconst SEG : u32 = ${SPLITK_SEGMENT}u;\nconst MAXD : u32 = ${WG}u;\n${ATT_STRUCT}\n${TOK_STRUCT}\n${attentionSplitKWgsl}`,
  };
}

/** Split-K decode attention, pass 2 (attention/plan_combine.wgsl): grid [heads, rows]. */
export function attentionCombineKernel(headDim: number): PlanKernel {
  const WG = attentionWorkgroupSize(headDim);
  return {
    key: `plan_attention_combine_wg${WG}_s${SPLITK_SEGMENT}`,
    bindings: [
      { name: 'A', kind: 'uniform', type: 'Att' },
      TOK,
      { name: 'part', kind: 'read', type: 'array<f32>' },
      { name: 'work', kind: 'rw', type: 'array<f32>' },
    ],
    body: `const WG : u32 = ${WG}u;\nconst SEG : u32 = ${SPLITK_SEGMENT}u;\n${ATT_STRUCT}\n${TOK_STRUCT}\n${attentionCombineWgsl}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Per-head q/k norms with RoPE, post-branch norms (the blocks of Qwen3 and Gemma 3)

/** Field names are the GEMV's where rowPos / cacheBase (matmul/plan_gemv_rows.wgsl) read them. */
const HEAD_NORM_STRUCT = `struct HeadNorm {
  headDim : u32, inOff : u32, inStride : u32, normOff : u32,
  eps : f32, cosOff : u32, sinOff : u32, posOff : u32,
  seq : u32, cap : u32, nKV : u32, pad0 : u32,
}`;

export interface HeadNormUniform {
  headDim: number;
  /** The projection's output in work: [rows, inStride], heads of headDim from column 0. */
  inOff: number;
  inStride: number;
  normOff: number;
  eps: number;
  cosOff: number;
  sinOff: number;
  posOff: number;
  seq: number;
  cap: number;
  /** Key heads (the cache layout); 0 for q. */
  nKV: number;
}

export function packHeadNorm(h: HeadNormUniform): ArrayBuffer {
  const buf = new ArrayBuffer(48);
  const u = new Uint32Array(buf);
  u.set([h.headDim, h.inOff, h.inStride, h.normOff, 0, h.cosOff, h.sinOff, h.posOff, h.seq, h.cap, h.nKV]);
  new Float32Array(buf)[4] = h.eps;
  return buf;
}

/** Threads of a head-norm workgroup: one per RoPE pair, a power of two (>= 32). */
function pairWorkgroupSize(headDim: number): number {
  let wg = 32;
  while (wg < headDim / 2) wg *= 2;
  return wg;
}

/**
 * rope/plan_head_norm.wgsl: RMSNorm per (head, row) then RoPE, q in place or k into the key cache
 * (`cache`); grid [heads, rows]. Bindings: G, tok, work, params, aux[, cache].
 */
export function headNormRopeKernel(headDim: number, cache: boolean): PlanKernel {
  const WG = pairWorkgroupSize(headDim);
  const b: BindingSpec[] = [
    { name: 'G', kind: 'uniform', type: 'HeadNorm' },
    TOK,
    { name: 'work', kind: 'rw', type: 'array<f32>' },
    { name: 'params', kind: 'read', type: 'array<f32>' },
    { name: 'aux', kind: 'read', type: 'array<f32>' },
  ];
  if (cache) b.push({ name: 'cache', kind: 'rw', type: 'array<f32>' });
  const fns = [
    'fn auxAt(i : u32) -> f32 {\n  return aux[i];\n}',
    cache ? 'fn cacheStore(i : u32, y : f32) {\n  cache[i] = y;\n}' : 'fn cacheStore(i : u32, y : f32) {\n}',
  ];
  return {
    key: `plan_head_norm_wg${WG}_c${cache ? 1 : 0}`,
    bindings: b,
    body: `const WG : u32 = ${WG}u;\nconst CACHE : bool = ${cache};\n${HEAD_NORM_STRUCT}\n${TOK_STRUCT}\n${fns.join('\n')}\n${gemvRowsWgsl}\n${headNormWgsl}`,
  };
}

const NORM_ADD_STRUCT = `struct NormAdd {
  H : u32, hOff : u32, xOff : u32, normOff : u32,
  eps : f32, pad0 : u32, pad1 : u32, pad2 : u32,
}`;

export function packNormAdd(n: { H: number; hOff: number; xOff: number; normOff: number; eps: number }): ArrayBuffer {
  const buf = new ArrayBuffer(32);
  new Uint32Array(buf).set([n.H, n.hOff, n.xOff, n.normOff]);
  new Float32Array(buf)[4] = n.eps;
  return buf;
}

/** rms-norm/plan_add.wgsl: x[row] += RMSNorm(h[row]) * w, a workgroup per row. Bindings: N, work, params. */
export function normAddKernel(): PlanKernel {
  return {
    key: 'plan_norm_add',
    bindings: [
      { name: 'N', kind: 'uniform', type: 'NormAdd' },
      { name: 'work', kind: 'rw', type: 'array<f32>' },
      { name: 'params', kind: 'read', type: 'array<f32>' },
    ],
    body: `const WG : u32 = 64u;\n${NORM_ADD_STRUCT}\n${normAddWgsl}`,
  };
}

const EMB_STRUCT = `struct Emb {
  H : u32, rowStart : u32, rowCount : u32, xOff : u32,
  rec : u32, B : u32, seq : u32, cap : u32,
  scale : f32, pad0 : u32, pad1 : u32, pad2 : u32,
}`;

/** `seq` > 0: a prefill chunk, row = b * seq + j embeds ids[b * cap + tok.slot + j] (the prompt table). */
export function packEmb(e: {
  H: number;
  rowStart: number;
  rowCount: number;
  xOff: number;
  rec: boolean;
  B: number;
  seq?: number;
  cap?: number;
  /** Multiplies every embedded row (default 1). */
  scale?: number;
}): ArrayBuffer {
  const buf = new ArrayBuffer(48);
  new Uint32Array(buf).set([e.H, e.rowStart, e.rowCount, e.xOff, e.rec ? 1 : 0, e.B, e.seq ?? 0, e.cap ?? 0]);
  new Float32Array(buf)[8] = e.scale ?? 1;
  return buf;
}

export function embedKernel(): PlanKernel {
  return {
    key: 'plan_embed',
    bindings: [
      { name: 'E', kind: 'uniform', type: 'Emb' },
      TOK,
      { name: 'work', kind: 'rw', type: 'array<f32>' },
      { name: 'ids', kind: 'read', type: 'array<i32>' },
      { name: 'table', kind: 'read', type: 'array<f32>' },
      { name: 'stats', kind: 'read', type: 'array<f32>' },
      { name: 'record', kind: 'rw', type: 'array<f32>' },
    ],
    body: `const WG : u32 = 64u;\n${EMB_STRUCT}\n${TOK_STRUCT}\n${embedWgsl}`,
  };
}

/** tfjs calls a kernel body's `main(index)` once per thread with index = workgroup * WG + lane. */
const TFJS_ENTRY = `@compute @workgroup_size(WG, 1, 1)
fn planMain(@builtin(workgroup_id) wid : vec3<u32>, @builtin(local_invocation_index) lid : u32) {
  main(i32(wid.x) * WG + i32(lid));
}`;

/** sample/op.wgsl as planned: logits [rows, vocab] -> result (the ids buffer), one workgroup per row. */
export function sampleKernel(vocab: number): PlanKernel & { entry: string } {
  const WG = rowWorkgroupSize(vocab);
  return {
    key: `plan_sample_wg${WG}`,
    entry: 'planMain',
    bindings: [
      { name: 'uniforms', kind: 'dyn', type: 'Tok' },
      { name: 'logits', kind: 'read', type: 'array<f32>' },
      { name: 'streams', kind: 'read', type: 'array<i32>' },
      { name: 'result', kind: 'rw', type: 'array<i32>' },
    ],
    body: `${TOK_STRUCT}\nconst WG : i32 = ${WG};\n${sampleWgsl}\n${TFJS_ENTRY}`,
  };
}

/**
 * token-stats/op.wgsl as planned: (log-prob of ids, entropy) per row of the scaled logits. The row
 * reduction is the tfjs path's choice (subgroups where probed) on a device that has subgroups,
 * the workgroup tree on any other.
 */
export function statsKernel(vocab: number, device: GPUDevice): PlanKernel & { entry: string } {
  const WG = rowWorkgroupSize(vocab);
  const chosen = rowReduce(WG);
  const reduce =
    chosen.key !== 'tree' && !device.features.has('subgroups' as GPUFeatureName)
      ? { key: 'tree', source: rowReduceTreeWgsl }
      : chosen;
  return {
    key: `plan_stats_wg${WG}_${reduce.key}`,
    entry: 'planMain',
    bindings: [
      { name: 'uniforms', kind: 'dyn', type: 'Tok' },
      { name: 'logits', kind: 'read', type: 'array<f32>' },
      { name: 'ids', kind: 'read', type: 'array<i32>' },
      { name: 'result', kind: 'rw', type: 'array<f32>' },
    ],
    body: `${TOK_STRUCT}\nconst WG : i32 = ${WG};\nconst OUT : i32 = 2;\n${reduce.source}\n${tokenStatsWgsl}\nfn refLogp(row : i32, tid : i32, vocab : i32) -> f32 {\n  return 0.0;\n}\n${TFJS_ENTRY}`,
  };
}
