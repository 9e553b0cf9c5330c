// Single planned kernels run on their own (a GpuPlan of one phase) against float64 references, at
// real model widths: the GPU-only split GEMV (matmul/plan_gemv.wgsl), the workgroup and split-K
// attention (attention/plan.wgsl, plan_splitk.wgsl + plan_combine.wgsl) and the learn GEMM in
// both layouts (learn_gemm*.wgsl, direct and tiled). Shared by the
// Dawn tests (e2e/gpuPaths.e2e.ts) and the kernel ratios bench (e2e/kernelRatios.e2e.ts).
import { mulberry32 } from '../../src/contract/mulberry32';
import { GpuPlan, alignUp, DYN_SLOT_BYTES, type BindingValue } from '../../src/engine/plan/plan';
import type { PlanKernel } from '../../src/engine/plan/kernel';
import {
  GemvMode,
  attentionCombineKernel,
  attentionKernel,
  attentionSplitKKernel,
  gemvKernel,
  gemvMaxRows,
  gemvWorkgroupsX,
  packAtt,
  packGemv,
  packTok,
  splitKPartialFloats,
  SPLITK_SEGMENT,
  type GemvLayout,
} from '../../src/engine/plan/decodeKernels';
import { gemmKernel, gemmWorkgroups, packGemm, type GemmLayout } from '../../src/engine/plan/learnKernels';
import {
  attentionCaseData,
  decodeAttentionF64,
  type AttentionCaseSpec,
} from '../../src/engine/kernels/attention/decodeAttentionReference';

export interface Dispatch {
  kernel: PlanKernel;
  values: BindingValue[];
  workgroups: [number, number, number];
}

/** A plan buffer holding `data`. */
export function upload(plan: GpuPlan, name: string, data: Float32Array | Int32Array): GPUBuffer {
  const b = plan.buffer(name, data.byteLength);
  plan.device.queue.writeBuffer(b, 0, data);
  return b;
}

export async function readFloats(device: GPUDevice, src: GPUBuffer, floats: number): Promise<Float32Array> {
  const read = device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, read, 0, floats * 4);
  device.queue.submit([enc.finish()]);
  await read.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(read.getMappedRange().slice(0));
  read.unmap();
  read.destroy();
  return out;
}

/** Finalises `dispatches` into the plan's phase 'run', with token slot 0 = `tok`, and runs it `times` times in one pass. */
export async function runPhase(plan: GpuPlan, dispatches: Dispatch[], tok: ArrayBuffer, times = 1): Promise<void> {
  for (const d of dispatches) plan.add('run', d.kernel, d.values, d.workgroups);
  plan.finalize();
  plan.device.queue.writeBuffer(plan.dyn, 0, tok);
  const enc = plan.device.createCommandEncoder();
  const pass = enc.beginComputePass();
  for (let i = 0; i < times; i++) plan.encode(pass, 'run', 0);
  pass.end();
  plan.device.queue.submit([enc.finish()]);
  await plan.device.queue.onSubmittedWorkDone();
}

function tokSlot(t: { kvLen?: number; slot?: number }): ArrayBuffer {
  const buf = new ArrayBuffer(DYN_SLOT_BYTES);
  packTok(
    {
      vocab: 1,
      temperature: 1,
      topK: 0,
      topP: 1,
      seedLo: 0,
      seedHi: 0,
      step: 0,
      slot: t.slot ?? 0,
      loraOn: false,
      kvLen: t.kvLen ?? 0,
      rec: 0,
      statT: 1,
    },
    buf,
    0,
  );
  return buf;
}

// ---------------------------------------------------------------------------------------------
// GEMV

export interface GemvCaseSpec {
  format: 'f32' | 'int4';
  /** Plain (y = x W^T) or GateUp (silu(x Wg^T) * (x Wu^T)). */
  mode: GemvMode.Plain | GemvMode.GateUp;
  K: number;
  N: number;
  rows: number;
  /** RMSNorm of x fused in. */
  norm: boolean;
  seed: number;
  /** The kernel layout (default 'split', the GPU one). */
  layout?: GemvLayout;
}

/** int4 group size of the planned path's int4 weights (model/quant.ts). */
const INT4_GROUP = 32;

interface Weight {
  /** Dequantised W [N, K] (the reference reads it). */
  dense: Float64Array;
  buffers: Float32Array[] | [Int32Array, Float32Array];
}

function randomWeight(rand: () => number, format: 'f32' | 'int4', N: number, K: number): Weight {
  const dense = new Float64Array(N * K);
  const amp = 1 / Math.sqrt(K);
  if (format === 'f32') {
    const w = Float32Array.from({ length: N * K }, () => (rand() * 2 - 1) * amp);
    dense.set(w);
    return { dense, buffers: [w] };
  }
  // int4: nibble n of word i holds q + 8 for k = 8 i + n; one scale per INT4_GROUP inputs.
  const words = new Int32Array((N * K) / 8);
  const scales = Float32Array.from({ length: (N * K) / INT4_GROUP }, () => (0.5 + rand()) * (amp / 4));
  for (let o = 0; o < N; o++) {
    for (let k = 0; k < K; k++) {
      const q = Math.floor(rand() * 16) - 8;
      const at = o * K + k;
      words[at >> 3] |= (q + 8) << (4 * (at & 7));
      dense[at] = q * scales[o * (K / INT4_GROUP) + Math.floor(k / INT4_GROUP)];
    }
  }
  return { dense, buffers: [words, scales] };
}

export interface GemvCaseResult {
  got: Float32Array;
  ref: Float64Array;
  /** Per output, sum_k |x_k W_ok| (the scale of a float32 rounding error). */
  mag: Float64Array;
  /** Milliseconds of `times` dispatches (only meaningful with times > 1: benches). */
  ms: number;
}

/** Runs one planned GEMV kernel on random inputs and returns it beside its float64 reference. */
export async function gemvCase(
  device: GPUDevice,
  s: GemvCaseSpec,
  opts: { times?: number; patch?: (k: PlanKernel) => PlanKernel } = {},
): Promise<GemvCaseResult> {
  const { K, N, rows, mode } = s;
  const layout = s.layout ?? 'split';
  const rand = mulberry32(s.seed);
  const x = Float32Array.from({ length: rows * K }, () => rand() * 2 - 1);
  const normW = Float32Array.from({ length: K }, () => 0.5 + rand());
  const eps = 1e-5;
  const w1 = randomWeight(rand, s.format, N, K);
  const w2 = mode === GemvMode.GateUp ? randomWeight(rand, s.format, N, K) : null;

  // float64 reference
  const xn = new Float64Array(rows * K);
  for (let b = 0; b < rows; b++) {
    let ss = 0;
    for (let k = 0; k < K; k++) ss += x[b * K + k] ** 2;
    const inv = s.norm ? 1 / Math.sqrt(ss / K + eps) : 1;
    for (let k = 0; k < K; k++) xn[b * K + k] = x[b * K + k] * (s.norm ? inv * normW[k] : 1);
  }
  const ref = new Float64Array(rows * N);
  const mag = new Float64Array(rows * N);
  for (let b = 0; b < rows; b++) {
    for (let o = 0; o < N; o++) {
      let y = 0;
      let y2 = 0;
      let m = 0;
      for (let k = 0; k < K; k++) {
        const xv = xn[b * K + k];
        y += xv * w1.dense[o * K + k];
        m += Math.abs(xv * w1.dense[o * K + k]);
        if (w2) {
          y2 += xv * w2.dense[o * K + k];
          m += Math.abs(xv * w2.dense[o * K + k]);
        }
      }
      ref[b * N + o] = w2 ? (y / (1 + Math.exp(-y))) * y2 : y;
      mag[b * N + o] = m;
    }
  }

  const plan = new GpuPlan(device, 1, `gemv case ${s.format} ${K}x${N}`);
  try {
    const xOff = 0;
    const outOff = alignUp(rows * K * 4) / 4;
    const work = plan.buffer('work', (outOff + rows * N) * 4);
    device.queue.writeBuffer(work, 0, x);
    const params = upload(plan, 'params', normW);
    const lora = plan.buffer('lora', 16);
    const wb = (w: Weight) => w.buffers.map((d, i) => ({ buffer: upload(plan, `w${i}`, d) }));
    const u = {
      K,
      N,
      rows,
      xOff,
      xStride: K,
      outOff,
      outStride: N,
      ...(s.norm ? { normOff: 0, eps } : {}),
    };
    let kernel = gemvKernel({
      shape: layout,
      mode,
      kind: s.format,
      ...(s.format === 'int4' ? { groupSize: INT4_GROUP } : {}),
      norm: s.norm,
    });
    if (opts.patch) kernel = opts.patch(kernel);
    const values: BindingValue[] = [
      { uniform: packGemv(u) },
      'dyn',
      { buffer: work },
      { buffer: params },
      { buffer: lora },
      ...wb(w1),
      ...(w2 ? wb(w2) : []),
    ];
    const workgroups: [number, number, number] = [
      gemvWorkgroupsX(layout, mode, N),
      Math.ceil(rows / gemvMaxRows(layout)),
      1,
    ];
    const times = opts.times ?? 1;
    const t0 = performance.now();
    await runPhase(plan, [{ kernel, values, workgroups }], tokSlot({}), times);
    const ms = performance.now() - t0;
    const all = await readFloats(device, work, outOff + rows * N);
    return { got: all.slice(outOff), ref, mag, ms };
  } finally {
    plan.dispose();
  }
}

/**
 * The split GEMV as it was before its reduction was laid out sum-major: thread-major
 * (red[tid * RM + j]), a 32-way bank conflict per access on a GPU. The same tree in the same order,
 * so the same sums bit for bit: the reference the new layout is held to, and the old side of the
 * kernel ratios bench.
 */
export function threadMajorGemv(k: PlanKernel): PlanKernel {
  const swaps: [string, string][] = [
    ['red[b * WG + tid] = ss;', 'red[tid * MAXB + b] = ss;'],
    ['red[b * WG + tid] += red[b * WG + tid + s];', 'red[tid * MAXB + b] += red[(tid + s) * MAXB + b];'],
    ['inverseSqrt(red[tid * WG]', 'inverseSqrt(red[tid]'],
    ['red[j * WG + tid] = acc[j];', 'red[tid * RM + j] = acc[j];'],
    ['red[j * WG + tid] += red[j * WG + tid + s];', 'red[tid * RM + j] += red[(tid + s) * RM + j];'],
    ['var y = red[tid * WG];', 'var y = red[tid];'],
  ];
  let body = k.body;
  for (const [now, before] of swaps) {
    if (!body.includes(now)) throw new Error(`threadMajorGemv: "${now}" is not in ${k.key}`);
    body = body.replace(now, before);
  }
  return { ...k, key: `${k.key}_thread_major`, body };
}

// ---------------------------------------------------------------------------------------------
// Attention

export interface AttentionRunSpec extends AttentionCaseSpec {
  /** 'whole': attention/plan.wgsl; 'splitk': plan_splitk.wgsl then plan_combine.wgsl (decode only). */
  kernel: 'whole' | 'splitk';
  /** Prefill: query columns per batch row, the first at slot len - 1 (causal); 0 or absent: a decode step over len slots. */
  seq?: number;
}

/**
 * Runs the planned attention on attentionCaseData's inputs (its q repeated as `seq` prefill columns
 * with a perturbation per column) and returns the output [B, seq || 1, nH, D] beside the float64
 * reference of each query over its own causal length.
 */
export async function attentionCase(
  device: GPUDevice,
  s: AttentionRunSpec,
  opts: { times?: number } = {},
): Promise<{ got: Float32Array; ref: Float64Array; ms: number }> {
  const { batch: B, heads: nH, kvHeads: nKV, capacity: C, headDim: D, len } = s;
  const seq = s.seq ?? 0;
  const cols = Math.max(seq, 1);
  const data = attentionCaseData(s);
  const rand = mulberry32(s.seed + 1);
  // Query of (b, column j): column j of a prefill sits at slot len - 1 + j and sees len + j slots.
  const qCols = Array.from({ length: cols }, (_, j) =>
    j === 0 ? data.q : Float32Array.from(data.q, (v) => v + (rand() - 0.5) * 0.5),
  );
  const q = new Float32Array(B * cols * nH * D);
  for (let b = 0; b < B; b++)
    for (let j = 0; j < cols; j++) q.set(qCols[j].subarray(b * nH * D, (b + 1) * nH * D), (b * cols + j) * nH * D);
  const ref = new Float64Array(B * cols * nH * D);
  for (let j = 0; j < cols; j++) {
    const r = decodeAttentionF64({ ...s, len: len + j }, { ...data, q: qCols[j] });
    for (let b = 0; b < B; b++) ref.set(r.subarray(b * nH * D, (b + 1) * nH * D), (b * cols + j) * nH * D);
  }
  const valid = Float32Array.from(data.bias, (v) => (v === 0 ? 1 : 0));
  const rows = B * cols;

  const plan = new GpuPlan(device, 1, `attention case ${s.kernel} ${len}`);
  try {
    const aOff = alignUp(q.byteLength) / 4;
    const work = plan.buffer('work', (aOff + q.length) * 4);
    device.queue.writeBuffer(work, 0, q);
    const aux = upload(plan, 'aux', valid);
    const kc = upload(plan, 'k cache', data.k);
    const vc = upload(plan, 'v cache', data.v);
    const att = { uniform: packAtt({ nH, nKV, D, cap: C, qOff: 0, aOff, validOff: 0, seq, rows }) };
    const dispatches: Dispatch[] = [];
    if (s.kernel === 'whole') {
      dispatches.push({
        kernel: attentionKernel(D),
        values: [att, 'dyn', { buffer: work }, { buffer: aux }, { buffer: kc }, { buffer: vc }],
        workgroups: [nH, rows, 1],
      });
    } else {
      if (seq) throw new Error('split-K attention runs decode steps only');
      const part = plan.buffer('partials', splitKPartialFloats(B, nH, D, C) * 4);
      dispatches.push(
        {
          kernel: attentionSplitKKernel(D),
          values: [att, 'dyn', { buffer: work }, { buffer: aux }, { buffer: kc }, { buffer: vc }, { buffer: part }],
          workgroups: [nH, B, Math.ceil(C / SPLITK_SEGMENT)],
        },
        {
          kernel: attentionCombineKernel(D),
          values: [att, 'dyn', { buffer: part }, { buffer: work }],
          workgroups: [nH, B, 1],
        },
      );
    }
    // A prefill chunk's first column is at slot len - 1; a decode step sees kvLen = len slots.
    const tok = seq ? tokSlot({ slot: len - 1 }) : tokSlot({ kvLen: len });
    const t0 = performance.now();
    await runPhase(plan, dispatches, tok, opts.times ?? 1);
    const ms = performance.now() - t0;
    const all = await readFloats(device, work, aOff + q.length);
    return { got: all.slice(aOff), ref, ms };
  } finally {
    plan.dispose();
  }
}

// ---------------------------------------------------------------------------------------------
// Learn GEMM

export type GemmCaseResult = GemvCaseResult;

export interface GemmCaseSpec {
  M: number;
  N: number;
  K: number;
  /** Batches (z), each its own A, B and C. f32 B only. */
  Z?: number;
  /** B(k, n) = W[n, k] (x W^T, the forward through a weight) instead of B [K, N] row-major. */
  transB: boolean;
  /** 'buf': B an f32 buffer; 'int4': a frozen int4 weight W [N, K] (transB). */
  format: 'buf' | 'int4';
  alpha?: number;
  accumulate?: boolean;
  bias?: boolean;
  residual?: boolean;
  layout: GemmLayout;
  seed: number;
}

/** Runs one learn GEMM on random operands: C [Z, M, N] beside its float64 reference and sum |a b| per output. */
export async function gemmCase(
  device: GPUDevice,
  s: GemmCaseSpec,
  opts: { times?: number } = {},
): Promise<GemmCaseResult> {
  const { M, N, K } = s;
  const Z = s.Z ?? 1;
  if (s.format === 'int4' && (Z !== 1 || !s.transB)) throw new Error('int4 B: one batch, transposed');
  const rand = mulberry32(s.seed);
  const fill = (n: number) => Float32Array.from({ length: n }, () => rand() * 2 - 1);
  const a = fill(Z * M * K);
  const c0 = fill(Z * M * N);
  const biasV = fill(N);
  const res = fill(Z * M * N);
  // B(z, k, n) as float64, and its buffers
  const bAt = new Float64Array(Z * K * N);
  let bBuffers: (Float32Array | Int32Array)[];
  if (s.format === 'buf') {
    const w = fill(Z * K * N); // [Z][K][N] or, transposed, [Z][N][K]
    for (let z = 0; z < Z; z++)
      for (let k = 0; k < K; k++)
        for (let n = 0; n < N; n++)
          bAt[(z * K + k) * N + n] = s.transB ? w[(z * N + n) * K + k] : w[(z * K + k) * N + n];
    bBuffers = [w];
  } else {
    const w = randomWeight(rand, 'int4', N, K);
    for (let k = 0; k < K; k++) for (let n = 0; n < N; n++) bAt[k * N + n] = w.dense[n * K + k];
    bBuffers = w.buffers;
  }
  const alpha = s.alpha ?? 1;
  const ref = new Float64Array(Z * M * N);
  const mag = new Float64Array(Z * M * N);
  for (let z = 0; z < Z; z++)
    for (let m = 0; m < M; m++)
      for (let n = 0; n < N; n++) {
        let y = 0;
        let g = 0;
        for (let k = 0; k < K; k++) {
          const p = a[(z * M + m) * K + k] * bAt[(z * K + k) * N + n];
          y += p;
          g += Math.abs(p);
        }
        const at = (z * M + m) * N + n;
        ref[at] = alpha * y + (s.accumulate ? c0[at] : 0) + (s.bias ? biasV[n] : 0) + (s.residual ? res[at] : 0);
        mag[at] = Math.abs(alpha) * g + 1;
      }

  const plan = new GpuPlan(device, 1, `gemm case ${M}x${N}x${K}`);
  try {
    const A = upload(plan, 'A', a);
    const C = upload(plan, 'C', c0);
    const Bias = upload(plan, 'bias', biasV);
    const R = upload(plan, 'R', res);
    const Bs = bBuffers.map((d, i) => upload(plan, `B${i}`, d));
    const bOp = s.transB ? { off: 0, s0: 1, s1: K, sb: N * K } : { off: 0, s0: N, s1: 1, sb: K * N };
    const g = {
      M,
      N,
      K,
      a: { off: 0, s0: K, s1: 1, sb: M * K },
      b: s.format === 'buf' ? bOp : { off: 0, s0: 0, s1: 0 },
      c: { off: 0, s0: N, s1: 1, sb: M * N },
      alpha,
      accumulate: s.accumulate,
      biasOff: s.bias ? 0 : undefined,
      residual: s.residual,
      ...(s.format === 'int4' ? { wK: K, wT: true } : {}),
    };
    const kernel = s.format === 'buf' ? gemmKernel('buf', 0, s.layout) : gemmKernel('int4', INT4_GROUP, s.layout);
    const values: BindingValue[] = [
      { uniform: packGemm(g) },
      { buffer: A },
      { buffer: Bs[0] },
      { buffer: C },
      { buffer: Bias },
      { buffer: R },
      ...(s.format === 'int4' ? [{ buffer: Bs[1] }] : []),
    ];
    const times = opts.times ?? 1;
    if (times > 1 && s.accumulate) throw new Error('a timed GEMM case cannot accumulate');
    const t0 = performance.now();
    await runPhase(plan, [{ kernel, values, workgroups: gemmWorkgroups(M, N, Z) }], tokSlot({}), times);
    const ms = performance.now() - t0;
    return { got: await readFloats(device, C, Z * M * N), ref, mag, ms };
  } finally {
    plan.dispose();
  }
}
