// Our own kernels on tfjs-wasm: wasm-gemm/gemm.c, ~26 KB of wasm32 SIMD that imports tfjs-wasm's
// memory and works on its tensors in place (built by wasm-gemm/build.sh with Debian's clang).
//
// BatchMatMul: tfjs-wasm ran any product with a batch dimension (the attention's scores and
// weighted sums, forward and backward) in a naive scalar loop, ~0.7 GMAC/s on the sandbox
// defender's shapes, 63 of a learning step's 176 ms in kernels, and any rank-2 product through
// XNNPACK, which packs its right operand on every call unless that tensor lives on (a weight),
// and keeps each packed copy. Ours runs every float32 product, 4 x 8 register tiles, 13-20
// GMAC/s on the learning step's shapes (dev/bench/cpu/gemmShapes.ts): the attention's products
// 63 -> 7 ms, the rest 1.0-5x faster than XNNPACK. Each output is summed over k in order, one
// multiply and one add per step, as tfjs-wasm's own loop does.
//
// Fused kernels where tfjs ops ran several each (the decode path's per-token kernel count is
// its host cost): RMSNorm (under a tape one taped op, one kernel each way), RoPE's forward and
// backward, a frozen projection with its LoRA delta (outside a tape one kernel; under a tape one
// taped op, one kernel each way), grouped-query attention and the token statistics (one taped op
// each, one kernel each way), the tied embedding's gather from E^T, SwiGLU's gate and its
// backward, AdamW's update and the gradient clip's sums: 277 -> 116 kernels per decoded token,
// 1,357 -> 572 per learning step of the sandbox defender (dev/bench/cpu/opProfile.ts; BENCHMARKS.md,
// issue 42's third and fourth passes). And Exp, vectorised.
import * as tf from '@tensorflow/tfjs';
import type { WasmKernelStatus } from '../../contract/workerApi';
import { gemmSharedWasmBase64, gemmWasmBase64 } from './wasm-gemm/gemmBinary';
import { reachedByVariables } from './wasmTape';

type Bmm = (
  a: number,
  b: number,
  c: number,
  scratch: number,
  batch: number,
  m: number,
  n: number,
  k: number,
  transA: number,
  transB: number,
  strideA: number,
  strideB: number,
) => void;

interface WasmBackend {
  wasm: {
    wasmMemory?: WebAssembly.Memory;
    asm?: { memory?: WebAssembly.Memory };
    _malloc(bytes: number): number;
    _free(ptr: number): void;
  };
  dataIdMap: { get(dataId: object): { memoryOffset: number } };
  makeOutput(shape: number[], dtype: 'float32'): tf.TensorInfo;
}

interface Ops {
  bmm: Bmm;
  rmsnorm(x: number, w: number, y: number, rows: number, H: number, eps: number, rout: number): void;
  rmsnorm_bwd(...args: number[]): void;
  rope(...args: number[]): void;
  gather_cols(et: number, ids: number, out: number, n: number, H: number, V: number): void;
  exp_f32(x: number, y: number, n: number): void;
  swiglu_fwd(g: number, u: number, y: number, n: number): void;
  swiglu_bwd(dy: number, g: number, u: number, dg: number, du: number, n: number): void;
  token_stats(x: number, ids: number, out: number, aux: number, rows: number, V: number): void;
  attn_fwd(...args: number[]): void;
  adamw(...args: number[]): void;
  sumsq_f32(x: number, n: number): number;
  scale_f32(x: number, y: number, n: number, s: number): void;
  attn_bwd(...args: number[]): void;
  token_stats_bwd(...args: number[]): void;
  lora_fwd(...args: number[]): void;
  lora_bwd(...args: number[]): void;
  lora_linear(
    x: number,
    wt: number,
    at: number,
    bts: number,
    y: number,
    scratch: number,
    N: number,
    inp: number,
    out: number,
    r: number,
  ): void;
}

let enabled = true;
/** Our kernels off (tfjs-wasm's stock ones run) or back on: an A/B switch for tests (dev/harness). */
export function setWasmKernels(on: boolean): void {
  enabled = on;
}

/** The compiled module for a plain memory (false) and for a shared one (true: the threaded build). */
const modules = new Map<boolean, WebAssembly.Module>();
const instances = new WeakMap<WebAssembly.Memory, Ops>();

function bytes(shared: boolean): Uint8Array {
  const b64 = shared ? gemmSharedWasmBase64 : gemmWasmBase64;
  if (typeof atob === 'function') return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

function memoryOf(backend: WasmBackend): WebAssembly.Memory | undefined {
  return backend.wasm.wasmMemory ?? backend.wasm.asm?.memory;
}

const isShared = (memory: WebAssembly.Memory) =>
  typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer;

/**
 * Our functions on this backend's memory, or null where they cannot be yet. tfjs-wasm's threaded
 * build has a shared memory: there gemm-shared.wasm (the same code, its import declared shared)
 * runs, on the calling thread only, as the other build does.
 */
function opsFor(backend: WasmBackend): Ops | null {
  const memory = memoryOf(backend);
  if (!memory || !enabled) return null;
  let ops = instances.get(memory);
  if (!ops) {
    const shared = isShared(memory);
    let module = modules.get(shared);
    if (!module) {
      // A page's main thread refuses to compile more than 4 KB synchronously: there the stock
      // kernel runs until the compile that installWasmKernels started lands.
      try {
        module = new WebAssembly.Module(bytes(shared) as BufferSource);
      } catch {
        return null;
      }
      modules.set(shared, module);
    }
    ops = new WebAssembly.Instance(module, { env: { memory } }).exports as unknown as Ops;
    instances.set(memory, ops);
  }
  return ops;
}

/** Floats of gemm.c's panel of B (its PANEL), at the start of every scratch. */
const PANEL = 16384;

const ptr = (backend: WasmBackend, t: tf.TensorInfo) => backend.dataIdMap.get(t.dataId).memoryOffset;

const size = (dims: number[]) => dims.reduce((p, d) => p * d, 1);

let calls = 0;
/** How many products our GEMM has run (tests check that it, not the stock kernel, ran). */
export const wasmGemmCalls = () => calls;

/** On tfjs-wasm, which kernels run (the Device dialog's line); null on another backend. */
export function wasmKernelStatus(): WasmKernelStatus | null {
  if (tf.getBackend() !== 'wasm') return null;
  const backend = tf.backend() as unknown as WasmBackend;
  const memory = memoryOf(backend);
  const ours = wasmGemmServes();
  return { ours, memory: ours && memory ? (isShared(memory) ? 'shared' : 'plain') : null, products: calls };
}

/**
 * Whether the current backend's BatchMatMul is ours and runs here (tfjs-wasm, the module for its
 * memory compiled): then a transposed operand costs nothing extra (gemm.c turns it in its
 * scratch), and callers need not turn operands with Transpose kernels of their own.
 */
export function wasmGemmServes(): boolean {
  if (tf.getBackend() !== 'wasm') return false;
  const k = tf.getKernel('BatchMatMul', 'wasm') as { ours?: boolean } | undefined;
  return k?.ours === true && opsFor(tf.backend() as unknown as WasmBackend) !== null;
}

/**
 * rmsNorm's forward (x [..., H], w [H]) in one kernel of ours, where it serves (wasmGemmServes),
 * else null. No gradient: for use outside a tape.
 */
export function wasmRmsNorm(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor | null {
  if (x.dtype !== 'float32' || w.dtype !== 'float32' || !wasmGemmServes()) return null;
  return tf.engine().runKernel(RMS_NORM, { x, w }, { eps }) as tf.Tensor;
}

/**
 * Under a tape: rmsNorm (x [..., H], w [H]) as one taped op, one kernel of ours forward (which
 * keeps each row's r) and one backward (dx and dw), where it serves (else null): the stock taped
 * op ran 6 kernels forward and 9 backward (rmsNorm.ts), its broadcast products over [rows, H] by
 * [H] 0.4 ms each on tfjs-wasm.
 */
export function wasmRmsNormTaped(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor | null {
  if (x.dtype !== 'float32' || w.dtype !== 'float32' || !wasmGemmServes()) return null;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [xi, wi, save] = args as [tf.Tensor, tf.Tensor1D, tf.GradSaveFunc];
    const [y, r] = tf.engine().runKernel(RMS_NORM_TAPED, { x: xi, w: wi }, { eps }) as tf.Tensor[];
    save([xi, wi, r]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, [xs, ws, rs]: tf.Tensor[]) =>
        tf.engine().runKernel(RMS_NORM_GRAD, { dy, x: xs, w: ws, r: rs }, {}) as tf.Tensor[],
    };
  });
  return f(x, w);
}

/**
 * RoPE (x [B, nH, L, D], cos and sinSigned [B, 1, L, D]) in one kernel of ours where it serves,
 * else null; `back`: its backward, dy cos + swap(dy sinSigned). `seq`: the heads not yet split on
 * the token-major side, x [B, L, nH D] in the forward (out [B, nH, L, D]) and the backward's
 * output [B, L, nH D] (the heads' transposes in the same pass). No gradient of its own.
 */
export function wasmRope(
  x: tf.Tensor,
  cos: tf.Tensor,
  sinSigned: tf.Tensor,
  back = false,
  seq = false,
): tf.Tensor | null {
  if ([x, cos, sinSigned].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  return tf.engine().runKernel(ROPE, { x, cos, sinSigned }, { back, seq }) as tf.Tensor;
}

/**
 * x wt + (x at) bts (a frozen projection W^T [in, out] with LoRA's A^T [in, r] and s B^T [r, out])
 * in one kernel of ours where it serves, else null: the same values as the three products and
 * the sum run apart, in 1 kernel instead of 4. No gradient: for use outside a tape.
 */
export function wasmLoraLinear(x: tf.Tensor2D, wt: tf.Tensor2D, at: tf.Tensor2D, bts: tf.Tensor2D): tf.Tensor2D | null {
  if ([x, wt, at, bts].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  return tf.engine().runKernel(LORA_LINEAR, { x, wt, at, bts }, {}) as tf.Tensor2D;
}

/**
 * Under a tape: x wt + s (x A^T) B^T (a frozen W^T [in, out], LoRA's A [r, in] and B [out, r] as
 * PEFT holds them) as one taped op whose forward and backward are one kernel of ours each, where
 * the stock path ran ~5 kernels forward and ~9 backward per projection (lora.ts's taped delta,
 * the frozen product, the sum and their gradients), with the same products, in the same order;
 * null where our kernels do not serve. Gradients go to A and B, and to x where a trainable
 * variable reaches it (reachedByVariables; layer 0's q, k and v read the frozen embedding: their
 * input gradients, ~12 M of a learning step's multiply-adds on the sandbox defender, are skipped,
 * as PyTorch's autograd skips them).
 */
export function wasmLoraTaped(
  x: tf.Tensor,
  wt: tf.Tensor2D,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scale: number,
): tf.Tensor | null {
  if ([x, wt, a, b].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  const xGrad = reachedByVariables(x);
  const op = (xi: tf.Tensor, ai: tf.Tensor, bi: tf.Tensor, save: tf.GradSaveFunc) => {
    const [y, t] = tf.engine().runKernel(LORA_FWD, { x: xi, wt, a: ai, b: bi }, { scale }) as tf.Tensor[];
    // A and B as variables are read as they are in the backward (no assign can fall between the
    // two passes of one gradient): a save clones each (an Identity kernel and a tape node, 42 of
    // a learning step's); other tensors are saved.
    const kept = ai instanceof tf.Variable && bi instanceof tf.Variable;
    save(kept ? [xi, t] : [xi, t, ai, bi]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor | tf.Tensor[], [xs, ts, as = ai, bs = bi]: tf.Tensor[]) =>
        tf
          .engine()
          .runKernel(LORA_BWD, { g: dy as tf.Tensor, x: xs, t: ts, wt, a: as, b: bs }, { scale, xGrad }) as tf.Tensor[],
    };
  };
  if (!xGrad) {
    const g = tf.customGrad((ai, bi, save) => op(x, ai as tf.Tensor, bi as tf.Tensor, save as tf.GradSaveFunc));
    return g(a, b);
  }
  const f = tf.customGrad((xi, ai, bi, save) =>
    op(xi as tf.Tensor, ai as tf.Tensor, bi as tf.Tensor, save as tf.GradSaveFunc),
  ) as (x: tf.Tensor, a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor;
  return f(x, a, b);
}

/**
 * Rows `ids` (int32, any shape) of E from E^T [H, V] as [...ids.shape, H], one kernel of ours
 * where it serves (else null): tfjs-wasm's gather of columns and the transpose after it took 2
 * kernels and ~2.8 ms of a learning step's 504 ids on the sandbox defender. No gradient.
 */
export function wasmGatherColumns(et: tf.Tensor2D, ids: tf.Tensor): tf.Tensor | null {
  if (et.dtype !== 'float32' || ids.dtype !== 'int32' || !wasmGemmServes()) return null;
  return tf.engine().runKernel(GATHER_COLUMNS, { et, ids }, {}) as tf.Tensor;
}

/** SwiGLU's gate (g sigmoid(g)) u in one kernel of ours where it serves, else null. No gradient. */
export function wasmSwiglu(g: tf.Tensor, u: tf.Tensor): tf.Tensor | null {
  if (g.dtype !== 'float32' || u.dtype !== 'float32' || !wasmGemmServes()) return null;
  return tf.engine().runKernel(SWIGLU, { g, u }, {}) as tf.Tensor;
}

/** SwiGLU's closed-form backward [dg, du] in one kernel of ours where it serves, else null. */
export function wasmSwigluGrad(dy: tf.Tensor, g: tf.Tensor, u: tf.Tensor): [tf.Tensor, tf.Tensor] | null {
  if ([dy, g, u].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  return tf.engine().runKernel(SWIGLU_GRAD, { dy, g, u }, {}) as unknown as [tf.Tensor, tf.Tensor];
}

/**
 * tokenStats (logits [rows, V], int32 ids [rows] -> [rows, 2] = (log p(id), entropy)) as one taped
 * op whose forward and backward are one kernel of ours each, where it serves (else null): the
 * stock ops ran ~14 kernels forward and ~20 backward over the [rows, V] logits (the clamp, log-
 * softmax, exp, the one-hot product, sums), ~11 ms of a learning step's kernels on the sandbox
 * defender. The backward is the closed form the WGSL path uses (token-stats/op_grad.wgsl).
 */
export function wasmTokenStats(logits: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D | null {
  if (logits.dtype !== 'float32' || ids.dtype !== 'int32' || !wasmGemmServes()) return null;
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [x, save] = args as [tf.Tensor2D, tf.GradSaveFunc];
    // aux [rows, 2]: each row's max and sum of exponentials, for the backward's p = e^(x - m) / s
    const [stats, aux] = tf.engine().runKernel(TOKEN_STATS, { x, ids }, {}) as tf.Tensor2D[];
    save([x, stats, ids, aux]);
    return {
      value: stats,
      gradFunc: (dy: tf.Tensor, [xs, st, is, ax]: tf.Tensor[]) =>
        tf.engine().runKernel(TOKEN_STATS_GRAD, { x: xs, ids: is, stats: st, aux: ax, dy }, {}) as tf.Tensor,
    };
  });
  return f(logits) as tf.Tensor2D;
}

/**
 * Grouped-query attention (q [B, nH, L, D], k and v [B, nKV, C, D], an additive mask [B, 1, 1, L,
 * C]) -> [B, L, nH D], as llama.ts's attention() computes it (scores scaled by D^-1/2, the mask,
 * softmax, the weighted sum of v), one kernel of ours where it serves (else null); under a tape
 * one taped op whose backward is one kernel (gradients to q, k and v). The stock ops ran 11
 * kernels forward and ~25 backward per layer, two Transposes among them.
 */
export function wasmAttention(
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  mask: tf.Tensor,
  nH: number,
  nKV: number,
): tf.Tensor3D | null {
  if ([q, k, v, mask].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  const [B, , L, D] = q.shape;
  const attrs = { nH, nKV, scale: 1 / Math.sqrt(D) };
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const [qi, ki, vi, save] = args as [tf.Tensor, tf.Tensor, tf.Tensor, tf.GradSaveFunc];
    const [out, p] = tf.engine().runKernel(ATTENTION, { q: qi, k: ki, v: vi, mask }, attrs) as tf.Tensor[];
    save([qi, ki, vi, p]);
    return {
      value: out.reshape([B, L, nH * D]),
      gradFunc: (dy: tf.Tensor, [qs, ks, vs, ps]: tf.Tensor[]) =>
        tf.engine().runKernel(ATTENTION_GRAD, { dy, q: qs, k: ks, v: vs, p: ps }, attrs) as tf.Tensor[],
    };
  });
  return f(q, k, v) as tf.Tensor3D;
}

/**
 * AdamW's update of one variable [p', m', v'] (optim.ts's adamwHost: the same float32 operations
 * in the same order, the same values bit for bit) as one kernel of ours, where it serves (else
 * null): the host update read p, m, v and g back and uploaded three arrays per variable.
 * `c`: b1, 1 - b1, b2, 1 - b2, 1 - lr wd, eps, bc2, lr / bc1 (rounded to float32 on the way in).
 */
export function wasmAdamW(p: tf.Tensor, m: tf.Tensor, v: tf.Tensor, g: tf.Tensor, c: number[]): tf.Tensor[] | null {
  if ([p, m, v, g].some((t) => t.dtype !== 'float32') || !wasmGemmServes()) return null;
  const [b1, a1, b2, a2, keep, eps, bc2, step] = c;
  return tf.engine().runKernel(ADAMW, { p, m, v, g }, { b1, a1, b2, a2, keep, eps, bc2, step }) as tf.Tensor[];
}

/**
 * The sum of x^2 over a float32 tensor (each square in float32, the sum in float64 in order:
 * optim.ts's clipByGlobalNorm on the host, the same value) read in place on tfjs-wasm's heap where
 * our kernels serve, else null: no readback copy of the gradient.
 */
export function wasmSumSquares(x: tf.Tensor): number | null {
  if (x.dtype !== 'float32' || !wasmGemmServes()) return null;
  const b = tf.backend() as unknown as WasmBackend;
  return opsFor(b)!.sumsq_f32(ptr(b, x), x.size);
}

/** x s (float32 products) in one kernel of ours where it serves, else null. */
export function wasmScale(x: tf.Tensor, s: number): tf.Tensor | null {
  if (x.dtype !== 'float32' || !wasmGemmServes()) return null;
  return tf.engine().runKernel(SCALE, { x }, { s }) as tf.Tensor;
}

const SCALE = 'SparringWasmScale';
const ADAMW = 'SparringWasmAdamW';
const ATTENTION = 'SparringWasmAttention';
const ATTENTION_GRAD = 'SparringWasmAttentionGrad';
const TOKEN_STATS = 'SparringWasmTokenStats';
const TOKEN_STATS_GRAD = 'SparringWasmTokenStatsGrad';
const SWIGLU = 'SparringWasmSwiglu';
const SWIGLU_GRAD = 'SparringWasmSwigluGrad';
const GATHER_COLUMNS = 'SparringWasmGatherColumns';
const LORA_FWD = 'SparringWasmLoraFwd';
const LORA_BWD = 'SparringWasmLoraBwd';
const LORA_LINEAR = 'SparringWasmLoraLinear';
const RMS_NORM = 'SparringWasmRmsNorm';
const RMS_NORM_TAPED = 'SparringWasmRmsNormTaped';
const RMS_NORM_GRAD = 'SparringWasmRmsNormGrad';
const ROPE = 'SparringWasmRope';

/**
 * Installs our kernels on the wasm backend (idempotent; after the wasm backend's import): its
 * BatchMatMul replaced by ours for every float32 product (broadcasts other than a batch of one,
 * and other dtypes, go to the stock kernel), and the RMSNorm and RoPE kernels.
 */
type Inputs = Record<string, tf.TensorInfo>;

/** One of our kernels on the wasm backend: `run` gets the backend, our functions, inputs and attrs. */
function ourKernel(
  kernelName: string,
  run: (
    b: WasmBackend,
    ops: Ops,
    inputs: Inputs,
    attrs: Record<string, number | boolean>,
  ) => tf.TensorInfo | tf.TensorInfo[],
): void {
  tf.registerKernel({
    kernelName,
    backendName: 'wasm',
    kernelFunc: ({ inputs, backend, attrs }) => {
      const b = backend as unknown as WasmBackend;
      return run(b, opsFor(b)!, inputs as Inputs, attrs as Record<string, number | boolean>);
    },
  });
}

/** `floats` of scratch on the wasm heap for `f`, freed after it, even if it throws. */
function withScratch<T>(b: WasmBackend, floats: number, f: (scratch: number) => T): T {
  const scratch = b.wasm._malloc(floats * 4);
  try {
    return f(scratch);
  } finally {
    b.wasm._free(scratch);
  }
}

export function installWasmKernels(): void {
  const stock = tf.getKernel('BatchMatMul', 'wasm');
  if (!stock || (stock as { ours?: boolean }).ours) return;
  ourKernel(RMS_NORM, (b, ops, { x, w }, { eps }) => {
    const H = x.shape[x.shape.length - 1];
    const out = b.makeOutput(x.shape, 'float32');
    ops.rmsnorm(ptr(b, x), ptr(b, w), ptr(b, out), size(x.shape) / H, H, eps as number, 0);
    return out;
  });
  ourKernel(RMS_NORM_TAPED, (b, ops, { x, w }, { eps }) => {
    const H = x.shape[x.shape.length - 1];
    const rows = size(x.shape) / H;
    const [out, r] = [b.makeOutput(x.shape, 'float32'), b.makeOutput([rows], 'float32')];
    ops.rmsnorm(ptr(b, x), ptr(b, w), ptr(b, out), rows, H, eps as number, ptr(b, r));
    return [out, r];
  });
  ourKernel(RMS_NORM_GRAD, (b, ops, { dy, x, w, r }) => {
    const H = x.shape[x.shape.length - 1];
    const [dx, dw] = [b.makeOutput(x.shape, 'float32'), b.makeOutput([H], 'float32')];
    ops.rmsnorm_bwd(...[dy, x, w, r, dx, dw].map((t) => ptr(b, t)), size(x.shape) / H, H);
    return [dx, dw];
  });
  ourKernel(LORA_LINEAR, (b, ops, { x, wt, at, bts }) => {
    const [N, inp] = x.shape;
    const [out, r] = [wt.shape[1], at.shape[1]];
    const y = b.makeOutput([N, out], 'float32');
    withScratch(b, PANEL + N * r, (scratch) =>
      ops.lora_linear(ptr(b, x), ptr(b, wt), ptr(b, at), ptr(b, bts), ptr(b, y), scratch, N, inp, out, r),
    );
    return y;
  });
  // Exp: tfjs-wasm's runs a scalar libm call per value, 8-25 ns each on the learning step's
  // log-softmax over [256, 512] (3 calls, 3-10 ms); ours is a 4-lane polynomial (Cephes' expf).
  const stockExp = tf.getKernel('Exp', 'wasm');
  if (stockExp) {
    tf.unregisterKernel('Exp', 'wasm');
    tf.registerKernel({
      ...stockExp,
      kernelFunc: (args) => {
        const x = (args.inputs as { x: tf.TensorInfo }).x;
        const b = args.backend as unknown as WasmBackend;
        const ops = x.dtype === 'float32' ? opsFor(b) : null;
        if (!ops) return stockExp.kernelFunc(args);
        const out = b.makeOutput(x.shape, 'float32');
        ops.exp_f32(ptr(b, x), ptr(b, out), size(x.shape));
        return out;
      },
    });
  }
  ourKernel(SWIGLU, (b, ops, { g, u }) => {
    const y = b.makeOutput(g.shape, 'float32');
    ops.swiglu_fwd(ptr(b, g), ptr(b, u), ptr(b, y), size(g.shape));
    return y;
  });
  ourKernel(SWIGLU_GRAD, (b, ops, { dy, g, u }) => {
    const [dg, du] = [b.makeOutput(g.shape, 'float32'), b.makeOutput(g.shape, 'float32')];
    ops.swiglu_bwd(ptr(b, dy), ptr(b, g), ptr(b, u), ptr(b, dg), ptr(b, du), size(g.shape));
    return [dg, du];
  });
  ourKernel(SCALE, (b, ops, { x }, { s }) => {
    const y = b.makeOutput(x.shape, 'float32');
    ops.scale_f32(ptr(b, x), ptr(b, y), size(x.shape), s as number);
    return y;
  });
  ourKernel(ADAMW, (b, ops, { p, m, v, g }, c) => {
    const outs = [p, m, v].map((t) => b.makeOutput(t.shape, 'float32'));
    const consts = ['b1', 'a1', 'b2', 'a2', 'keep', 'eps', 'bc2', 'step'].map((k) => c[k] as number);
    ops.adamw(...[p, m, v, g, ...outs].map((t) => ptr(b, t)), size(p.shape), ...consts);
    return outs;
  });
  ourKernel(ATTENTION, (b, ops, { q, k, v, mask }, { nH, nKV, scale }) => {
    const [B, , L, D] = q.shape;
    const C = k.shape[2];
    const [out, p] = [
      b.makeOutput([B, L, nH as number, D], 'float32'),
      b.makeOutput([B, nH as number, L, C], 'float32'),
    ];
    const args = [q, k, v, mask, p, out].map((t) => ptr(b, t));
    withScratch(b, PANEL + L, (scratch) =>
      ops.attn_fwd(...args, scratch, B, nH as number, nKV as number, L, C, D, scale as number),
    );
    return [out, p];
  });
  ourKernel(ATTENTION_GRAD, (b, ops, { dy, q, k, v, p }, { nH, nKV, scale }) => {
    const [B, , L, D] = q.shape;
    const C = k.shape[2];
    const G = (nH as number) / (nKV as number);
    const [dq, dk, dv] = [q, k, v].map((t) => b.makeOutput(t.shape, 'float32'));
    const args = [dy, q, k, v, p, dq, dk, dv].map((t) => ptr(b, t));
    withScratch(b, PANEL + G * L * D + G * L * C, (scratch) =>
      ops.attn_bwd(...args, scratch, B, nH as number, nKV as number, L, C, D, scale as number),
    );
    return [dq, dk, dv];
  });
  ourKernel(TOKEN_STATS, (b, ops, { x, ids }) => {
    const [rows, V] = x.shape;
    const [out, aux] = [b.makeOutput([rows, 2], 'float32'), b.makeOutput([rows, 2], 'float32')];
    ops.token_stats(ptr(b, x), ptr(b, ids), ptr(b, out), ptr(b, aux), rows, V);
    return [out, aux];
  });
  ourKernel(TOKEN_STATS_GRAD, (b, ops, { x, ids, stats, aux, dy }) => {
    const [rows, V] = x.shape;
    const dx = b.makeOutput([rows, V], 'float32');
    ops.token_stats_bwd(...[x, ids, stats, aux, dy, dx].map((t) => ptr(b, t)), rows, V);
    return dx;
  });
  ourKernel(GATHER_COLUMNS, (b, ops, { et, ids }) => {
    const [H, V] = et.shape;
    const out = b.makeOutput([...ids.shape, H], 'float32');
    ops.gather_cols(ptr(b, et), ptr(b, ids), ptr(b, out), size(ids.shape), H, V);
    return out;
  });
  // x of any rank [..., in] (its rows in place: no Reshape kernels around the taped op)
  ourKernel(LORA_FWD, (b, ops, { x, wt, a, b: B }, { scale }) => {
    const inp = x.shape[x.shape.length - 1];
    const N = size(x.shape) / inp;
    const [out, r] = [wt.shape[1], a.shape[0]];
    const y = b.makeOutput([...x.shape.slice(0, -1), out], 'float32');
    const t = b.makeOutput([N, r], 'float32');
    const args = [x, wt, a, B, y, t].map((u) => ptr(b, u));
    withScratch(b, PANEL, (scratch) => ops.lora_fwd(...args, scratch, N, inp, out, r, scale as number));
    return [y, t];
  });
  // xGrad false: [dA, dB] only (no input gradient's products)
  ourKernel(LORA_BWD, (b, ops, { g, x, t, wt, a, b: B }, { scale, xGrad }) => {
    const inp = x.shape[x.shape.length - 1];
    const N = size(x.shape) / inp;
    const [out, r] = [wt.shape[1], a.shape[0]];
    const dx = xGrad ? b.makeOutput(x.shape, 'float32') : null;
    const da = b.makeOutput([r, inp], 'float32');
    const db = b.makeOutput([out, r], 'float32');
    const args = [g, x, t, wt, a, B].map((u) => ptr(b, u));
    const rest = [dx ? ptr(b, dx) : 0, ptr(b, da), ptr(b, db)];
    withScratch(b, PANEL + N * r, (scratch) =>
      ops.lora_bwd(...args, ...rest, scratch, N, inp, out, r, scale as number),
    );
    return dx ? [dx, da, db] : [da, db];
  });
  ourKernel(ROPE, (b, ops, { x, cos, sinSigned }, { back, seq }) => {
    const [B, , L, D] = cos.shape;
    const nH = size(x.shape) / (B * L * D);
    const out = b.makeOutput(!seq ? x.shape : back ? [B, L, nH * D] : [B, nH, L, D], 'float32');
    ops.rope(ptr(b, x), ptr(b, cos), ptr(b, sinSigned), ptr(b, out), B, nH, L, D, back ? 1 : 0, seq ? 1 : 0);
    return out;
  });
  for (const shared of [false, true])
    if (!modules.has(shared) && (!shared || typeof SharedArrayBuffer !== 'undefined'))
      WebAssembly.compile(bytes(shared) as BufferSource).then(
        (m) => modules.has(shared) || modules.set(shared, m),
        () => {},
      );
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    ...stock,
    ours: true,
    kernelFunc: (args) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo };
      const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
      const backend = args.backend as unknown as WasmBackend;
      const ra = a.shape.length;
      const rb = b.shape.length;
      const outerA = a.shape.slice(0, -2);
      const outerB = b.shape.slice(0, -2);
      const batchA = size(outerA);
      const batchB = size(outerB);
      const batch = Math.max(batchA, batchB);
      const sameOuter = outerA.length === outerB.length && outerA.every((d, i) => d === outerB[i]);
      const bmm =
        a.dtype === 'float32' && b.dtype === 'float32' && (sameOuter || batchA === 1 || batchB === 1)
          ? opsFor(backend)?.bmm
          : null;
      if (!bmm) return stock.kernelFunc(args);
      const M = transposeA ? a.shape[ra - 1] : a.shape[ra - 2];
      const K = transposeA ? a.shape[ra - 2] : a.shape[ra - 1];
      const N = transposeB ? b.shape[rb - 2] : b.shape[rb - 1];
      if ((transposeB ? b.shape[rb - 1] : b.shape[rb - 2]) !== K)
        throw new Error(`matMul: inner shapes of ${a.shape} and ${b.shape} differ`);
      const outer = batchA >= batchB ? outerA : outerB;
      const out = backend.makeOutput([...outer, M, N], 'float32');
      // A panel of B (gemm.c's PANEL): a transposed operand is read in place or turned there.
      withScratch(backend, PANEL, (scratch) =>
        bmm(
          ptr(backend, a),
          ptr(backend, b),
          ptr(backend, out),
          scratch,
          batch,
          M,
          N,
          K,
          transposeA ? 1 : 0,
          transposeB ? 1 : 0,
          batchA === 1 ? 0 : M * K,
          batchB === 1 ? 0 : K * N,
        ),
      );
      calls++;
      return out;
    },
  } as tf.KernelConfig);
}
