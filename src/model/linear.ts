// The linear layer every projection of the model goes through: y = x W^T (+ b) (+ adapter(x)).
//
// Two seams, so the storage of W and the trainable part evolve independently:
//  - FrozenWeight: how W is held and multiplied (dense float32 today; weight-only int8 in
//    quant.ts). Frozen weights are plain tensors, never tf.variable, so the tape never computes
//    a gradient for them (gradients still flow *through* them to the input).
//  - LinearAdapter: an additive branch on the same input (LoRA in lora.ts), kept factored:
//    y = x W^T + s (x A^T) B^T, never W + s B A rebuilt on every call.

import * as tf from '@tensorflow/tfjs';
import {
  engineOptions,
  rowChunks,
  wasmGatherColumns,
  wasmGemmServes,
  wasmLoraLinear,
  wasmLoraTaped,
} from '../engine/index';
import type { WeightKind } from '../contract/weightFormat';

/**
 * How a dense weight is stored. 'outIn' is W [out, in] (PyTorch's layout), what the WebGPU kernels
 * and the planned paths read. 'inOut' is W^T [in, out], what tfjs-wasm's fast GEMM takes: its
 * BatchMatMul runs XNNPACK only for an untransposed rank-2 product and a naive loop otherwise,
 * 0.54 against 7.2 GFLOP/s on x W^T (issue 42's measurement), so on wasm (and cpu, which runs the
 * same code) the weights are turned once at load time. A pretended binding limit (tests of the
 * row blocks) keeps the WebGPU layout.
 */
export type WeightLayout = 'outIn' | 'inOut';

export function weightLayout(backend: string = tf.getBackend()): WeightLayout {
  return (backend === 'wasm' || backend === 'cpu') && engineOptions().bindingLimit === null ? 'inOut' : 'outIn';
}

/**
 * op(a) op(b) for rank-2 a, b, where op transposes when asked. On wasm every product is made
 * untransposed, the only form XNNPACK serves there: an operand to transpose is transposed by its
 * own kernel first (O(size), against O(size x the other side) for the product), and the
 * gradients are products of the same kind (tfjs's own MatMul gradient asks for transposed ones,
 * which run the naive loop). Elsewhere it is tf.matMul.
 */
export function matMul2d(a: tf.Tensor2D, b: tf.Tensor2D, transposeA = false, transposeB = false): tf.Tensor2D {
  // Our GEMM on wasm (engine/kernels/wasmGemm.ts) takes any transpose pair at full speed.
  if (tf.getBackend() !== 'wasm' || wasmGemmServes()) return tf.matMul(a, b, transposeA, transposeB);
  const [x, y] = [transposeA ? tf.transpose(a) : a, transposeB ? tf.transpose(b) : b];
  return recordingGradients() ? plainMatMul(x, y) : tf.matMul(x, y);
}

/**
 * Whether a gradient tape is recording now. Outside one (decode, reference passes) the products
 * skip tf.customGrad, whose scope cost about 64 of the ~420 tfjs ops per decoded token of the
 * sandbox defender at batch 1.
 */
export function recordingGradients(): boolean {
  return tf.engine().state.gradientDepth > 0;
}

/** a b with both gradients as untransposed products (see matMul2d). */
const plainMatMul = tf.customGrad((a, b, save) => {
  (save as tf.GradSaveFunc)([a as tf.Tensor, b as tf.Tensor]);
  return {
    value: tf.matMul(a as tf.Tensor2D, b as tf.Tensor2D),
    gradFunc: (dy, saved) => {
      const [sa, sb] = saved as tf.Tensor2D[];
      const g = dy as tf.Tensor2D;
      return [timesTransposed(g, sb), tf.matMul(tf.transpose(sa), g)];
    },
  };
}) as (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

/**
 * g b^T [M, K] for g [M, N], b [K, N] from untransposed products only: (b g^T)^T when that moves
 * fewer values through transposes (g and the result, M (N + K)) than b^T does (b, then XNNPACK's
 * packing of the new operand: 2 K N); a weight b of a long batch is never copied.
 */
function timesTransposed(g: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (tf.getBackend() !== 'wasm' || wasmGemmServes()) return tf.matMul(g, b, false, true);
  const [M, N] = g.shape;
  const K = b.shape[0];
  return M * (N + K) < 2 * K * N ? tf.transpose(tf.matMul(b, tf.transpose(g))) : tf.matMul(g, tf.transpose(b));
}

/** A frozen weight matrix W of shape [out, in] (PyTorch nn.Linear layout). */
export interface FrozenWeight {
  /** Its storage, named as the contract names a weight format's kind (contract/weightFormat.ts). */
  readonly kind: WeightKind;
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** Bytes of device memory the weight holds. */
  readonly bytes: number;
  /** x [N, in] -> x W^T [N, out]. */
  matmul(x: tf.Tensor2D): tf.Tensor2D;
  /** W as dense float32 [out, in] (a new tensor; the caller disposes it). */
  toDense(): tf.Tensor2D;
  dispose(): void;
}

/** Dense float32 weight. */
export class DenseWeight implements FrozenWeight {
  readonly kind = 'f32';
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** @param w [out, in]; ownership passes to this object. */
  constructor(readonly w: tf.Tensor2D) {
    [this.outFeatures, this.inFeatures] = w.shape;
  }
  get bytes(): number {
    return this.w.size * 4;
  }
  matmul(x: tf.Tensor2D): tf.Tensor2D {
    // transposeB: multiply by W^T without materialising the transpose (but see matMul2d on wasm).
    return matMul2d(x, this.w, false, true);
  }
  toDense(): tf.Tensor2D {
    return this.w.clone();
  }
  dispose(): void {
    this.w.dispose();
  }
}

/**
 * Dense float32 weight held in row blocks that each fit one storage binding: an embedding or LM
 * head of a 150k vocabulary is over 128 MiB (WebGPU's guaranteed binding size) in float32. Built
 * from the host array (denseFromHost) so no tensor over the limit is ever created; the product
 * concatenates the blocks' columns, and as an embedding table it gathers block by block.
 */
export class BlockedDenseWeight implements FrozenWeight {
  readonly kind = 'f32';
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** First row of each block. */
  private readonly starts: number[];

  constructor(readonly blocks: tf.Tensor2D[]) {
    if (blocks.length === 0) throw new Error('BlockedDenseWeight: no blocks');
    this.inFeatures = blocks[0].shape[1];
    this.starts = [];
    let rows = 0;
    for (const b of blocks) {
      if (b.shape[1] !== this.inFeatures)
        throw new Error(`BlockedDenseWeight: block of width ${b.shape[1]}, first block ${this.inFeatures}`);
      this.starts.push(rows);
      rows += b.shape[0];
    }
    this.outFeatures = rows;
  }
  get bytes(): number {
    return this.blocks.reduce((s, b) => s + b.size * 4, 0);
  }
  matmul(x: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(
      () =>
        tf.concat(
          this.blocks.map((b) => matMul2d(x, b, false, true)),
          1,
        ) as tf.Tensor2D,
    );
  }
  /** Rows `ids` of W (any shape of int32 ids -> [...ids.shape, in]): each block serves the ids it holds. */
  gather(ids: tf.Tensor): tf.Tensor {
    return tf.tidy(() => {
      const parts = this.blocks.map((b, i) => {
        const local = tf.sub(ids, this.starts[i]);
        const held = tf.logicalAnd(tf.greaterEqual(local, 0), tf.less(local, b.shape[0]));
        const rows = tf.gather(b, tf.clipByValue(local, 0, b.shape[0] - 1).toInt());
        return tf.mul(rows, tf.expandDims(held.toFloat(), -1));
      });
      // Pairwise adds, not addN: tfjs-webgpu's AddN binds every input at once, past the 8
      // storage buffers a shader stage is guaranteed.
      return parts.reduce((acc, p) => tf.add(acc, p));
    });
  }
  toDense(): tf.Tensor2D {
    return tf.concat(this.blocks, 0) as tf.Tensor2D;
  }
  dispose(): void {
    tf.dispose(this.blocks);
  }
}

/**
 * Dense float32 weight held as W^T [in, out] (the 'inOut' layout of tfjs-wasm's fast GEMM): the
 * product is x W^T = x wt, untransposed, and its gradient to x (dy W) is made of untransposed
 * products too. W is a constant of the product (not an input), so the backward never computes a
 * gradient for it. As a tied embedding it gathers columns.
 */
export class TransposedWeight implements FrozenWeight {
  readonly kind = 'f32';
  readonly outFeatures: number;
  readonly inFeatures: number;
  private readonly product: (x: tf.Tensor2D) => tf.Tensor2D;

  /** @param wt W^T [in, out]; ownership passes to this object. */
  constructor(readonly wt: tf.Tensor2D) {
    [this.inFeatures, this.outFeatures] = wt.shape;
    this.product = tf.customGrad((x) => ({
      value: tf.matMul(x as tf.Tensor2D, wt),
      gradFunc: (dy) => timesTransposed(dy as tf.Tensor2D, wt),
    })) as (x: tf.Tensor2D) => tf.Tensor2D;
  }
  get bytes(): number {
    return this.wt.size * 4;
  }
  matmul(x: tf.Tensor2D): tf.Tensor2D {
    return recordingGradients() ? this.product(x) : tf.matMul(x, this.wt);
  }
  /** Rows `ids` of W (any shape of int32 ids -> [...ids.shape, in]): columns of W^T, turned. */
  gather(ids: tf.Tensor): tf.Tensor {
    return this.rows(ids);
  }
  /**
   * Off the tape (a custom op with no gradient to give: the table is frozen): tfjs's GatherV2
   * saves its input for a backward, and tfjs-wasm saves by copying, 108 MiB of E^T per learning
   * step of the SmolLM2-135M shape.
   */
  private readonly rows = tf.customGrad((ids) => ({
    value: tf.tidy(
      () =>
        (tf.getBackend() === 'wasm' ? wasmGatherColumns(this.wt, ids as tf.Tensor) : null) ??
        tf
          .transpose(tf.gather(this.wt, (ids as tf.Tensor).reshape([-1]), 1))
          .reshape([...(ids as tf.Tensor).shape, this.inFeatures]),
    ),
    gradFunc: () => tf.zerosLike(ids as tf.Tensor),
  })) as (ids: tf.Tensor) => tf.Tensor;
  toDense(): tf.Tensor2D {
    return tf.transpose(this.wt);
  }
  dispose(): void {
    this.wt.dispose();
  }
}

/**
 * Columns [c0, c0 + out) of a W^T shared by several projections of the same input (q, k, v; gate,
 * up), held once: the forward runs one product for the group (forwardGroup) and splits it. On
 * its own (a caller that multiplies one projection) it slices the group's product. The shared
 * weight is freed when the last of its columns is.
 */
export class WeightColumns implements FrozenWeight {
  readonly kind = 'f32';
  readonly inFeatures: number;

  constructor(
    readonly group: TransposedWeight,
    readonly c0: number,
    readonly outFeatures: number,
    private readonly refs: { count: number },
  ) {
    this.inFeatures = group.inFeatures;
    refs.count++;
  }
  get bytes(): number {
    return this.inFeatures * this.outFeatures * 4;
  }
  matmul(x: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => tf.slice(this.group.matmul(x), [0, this.c0], [-1, this.outFeatures]));
  }
  toDense(): tf.Tensor2D {
    return tf.tidy(() => tf.transpose(tf.slice(this.group.wt, [0, this.c0], [-1, this.outFeatures])));
  }
  private disposed = false;
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    if (--this.refs.count === 0) this.group.dispose();
  }
}

/**
 * One W^T [in, sum of outs] for projections of the same input, from their host W [out_i, in],
 * as WeightColumns (one per projection, in order).
 */
export function groupFromHost(parts: { data: Float32Array; out: number }[], inp: number): WeightColumns[] {
  const total = parts.reduce((a, p) => a + p.out, 0);
  const stacked = new Float32Array(total * inp);
  let row = 0;
  for (const p of parts) {
    stacked.set(p.data, row * inp);
    row += p.out;
  }
  const group = new TransposedWeight(tf.tensor2d(transposeHost(stacked, total, inp), [inp, total]));
  const refs = { count: 0 };
  let c0 = 0;
  return parts.map((p) => {
    const w = new WeightColumns(group, c0, p.out, refs);
    c0 += p.out;
    return w;
  });
}

/**
 * The forwards of linears that read the same x: one product and a split where their weights are
 * the consecutive columns of one group (groupFromHost), each linear's bias and adapter added to
 * its part; else one forward each. On the defender at batch-1 decode the q/k/v group saves 2
 * products and 4 reshapes per layer, gate/up 1 and 2, and the products are wider.
 */
export function forwardGroup(linears: Linear[], x: tf.Tensor): tf.Tensor[] {
  const ws = linears.map((l) => l.weight);
  const group = ws[0] instanceof WeightColumns ? ws[0].group : null;
  let next = 0;
  const whole =
    group !== null &&
    ws.every(
      (w) => w instanceof WeightColumns && w.group === group && w.c0 === next && ((next += w.outFeatures), true),
    ) &&
    next === group.outFeatures;
  if (!whole) return linears.map((l) => l.forward(x));
  return tf.tidy(() => {
    const lead = x.shape.slice(0, -1);
    const x2 = x.reshape([-1, group.inFeatures]) as tf.Tensor2D;
    const parts = tf.split(
      group.matmul(x2),
      ws.map((w) => w.outFeatures),
      1,
    ) as tf.Tensor2D[];
    return parts.map((y, i) => linears[i].finish(y, x2, lead));
  });
}

/** A dense weight from W [out, in] in the layout of the backend (ownership of w passes). */
export function denseWeight(w: tf.Tensor2D, layout: WeightLayout = weightLayout()): DenseWeight | TransposedWeight {
  if (layout === 'outIn') return new DenseWeight(w);
  const wt = tf.transpose(w);
  w.dispose();
  return new TransposedWeight(wt);
}

/** W [out, in] as the host array of W^T [in, out]. */
export function transposeHost(data: Float32Array, out: number, inp: number): Float32Array {
  const t = new Float32Array(out * inp);
  for (let o = 0; o < out; o++) {
    const row = o * inp;
    for (let i = 0; i < inp; i++) t[i * out + o] = data[row + i];
  }
  return t;
}

/**
 * W [out, in] from host data in the backend's layout: W^T in one tensor on wasm and cpu (turned on
 * the host, so no second device copy exists even for a moment); on WebGPU one tensor when it fits
 * a storage binding, else row blocks.
 */
export function denseFromHost(
  data: Float32Array,
  shape: [number, number],
  layout: WeightLayout = weightLayout(),
): DenseWeight | BlockedDenseWeight | TransposedWeight {
  const [out, inp] = shape;
  if (layout === 'inOut') return new TransposedWeight(tf.tensor2d(transposeHost(data, out, inp), [inp, out]));
  const chunks = rowChunks(out, inp * 4);
  if (chunks.length === 1) return new DenseWeight(tf.tensor2d(data, shape));
  let r0 = 0;
  return new BlockedDenseWeight(
    chunks.map((rows) => {
      const t = tf.tensor2d(data.subarray(r0 * inp, (r0 + rows) * inp), [rows, inp]);
      r0 += rows;
      return t;
    }),
  );
}

/** An additive branch on a linear layer's input: returns the delta to add, or null when off. */
export interface LinearAdapter {
  /** x [N, in] -> delta [N, out], or null to contribute nothing (adapter disabled). */
  delta(x: tf.Tensor2D): tf.Tensor2D | null;
  /** Where the delta is (x at) bts now (no dropout, no tape, wasm): at [in, r] and bts [r, out]. */
  fusedFactors?(): [tf.Tensor2D, tf.Tensor2D] | null;
  /** Where the delta is s (x A^T) B^T under a tape (no dropout, wasm): A [r, in], B [out, r], s. */
  tapedFactors?(): { a: tf.Tensor2D; b: tf.Tensor2D; scale: number } | null;
  dispose(): void;
}

export class Linear {
  adapter: LinearAdapter | null = null;

  /**
   * @param name the Hugging Face module path, e.g. "model.layers.3.self_attn.q_proj"
   *   (used for error messages, LoRA target matching and PEFT export names).
   */
  constructor(
    readonly name: string,
    public weight: FrozenWeight,
    public bias: tf.Tensor1D | null = null,
  ) {
    if (bias && bias.shape[0] !== weight.outFeatures) {
      throw new Error(`${name}: bias has ${bias.shape[0]} entries but the weight has ${weight.outFeatures} outputs`);
    }
  }

  get inFeatures(): number {
    return this.weight.inFeatures;
  }
  get outFeatures(): number {
    return this.weight.outFeatures;
  }

  /** x [..., in] -> [..., out]. */
  forward(x: tf.Tensor): tf.Tensor {
    return tf.tidy(() => {
      const taped = this.tapedFused(x);
      if (taped) return taped;
      const x2 = x.reshape([-1, this.inFeatures]) as tf.Tensor2D;
      const fused = this.fused(x2);
      if (fused) return fused.reshape([...x.shape.slice(0, -1), this.outFeatures]);
      return this.finish(this.weight.matmul(x2), x2, x.shape.slice(0, -1));
    });
  }

  /**
   * x W^T with LoRA's delta as one kernel of ours (engine/kernels/wasmGemm.ts) outside a tape on
   * wasm, where four ran (three products and the sum; at batch-1 decode 84 of 277 kernels per
   * token of the sandbox defender), or null.
   */
  private fused(x2: tf.Tensor2D): tf.Tensor2D | null {
    if (this.bias || !(this.weight instanceof TransposedWeight) || recordingGradients()) return null;
    const f = this.adapter?.fusedFactors?.();
    return f ? wasmLoraLinear(x2, this.weight.wt, f[0], f[1]) : null;
  }

  /**
   * Under a tape on wasm: x [..., in] -> [..., out] with LoRA's delta as one taped op, one kernel of
   * ours each way (wasmLoraTaped), on x's rows in place (no Reshape kernels either side), or null.
   */
  private tapedFused(x: tf.Tensor): tf.Tensor | null {
    if (this.bias || !(this.weight instanceof TransposedWeight) || !recordingGradients()) return null;
    const t = this.adapter?.tapedFactors?.();
    return t ? wasmLoraTaped(x, this.weight.wt, t.a, t.b, t.scale) : null;
  }

  /** The output [...lead, out] from the product y = x2 W^T [N, out]: bias and adapter added. */
  finish(y: tf.Tensor2D, x2: tf.Tensor2D, lead: number[]): tf.Tensor {
    if (this.bias) y = y.add(this.bias);
    const d = this.adapter?.delta(x2);
    if (d) y = y.add(d);
    return y.reshape([...lead, this.outFeatures]);
  }

  /** Disposes the weight, bias and adapter (a tied weight must be disposed by its owner instead). */
  dispose(): void {
    this.weight.dispose();
    this.bias?.dispose();
    this.adapter?.dispose();
  }
}
