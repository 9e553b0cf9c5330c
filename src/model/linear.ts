// The linear layer every projection of the model goes through: y = x W^T (+ b) (+ adapter(x)).
//
// Two seams, so the storage of W and the trainable part evolve independently:
//  - FrozenWeight: how W is held and multiplied (dense float32 today; weight-only int8 in
//    quant.ts). Frozen weights are plain tensors, never tf.variable, so the tape never computes
//    a gradient for them (gradients still flow *through* them to the input).
//  - LinearAdapter: an additive branch on the same input (LoRA in lora.ts), kept factored:
//    y = x W^T + s (x A^T) B^T, never W + s B A rebuilt on every call.

import * as tf from '@tensorflow/tfjs';
import { rowChunks } from '../engine/index';

/** A frozen weight matrix W of shape [out, in] (PyTorch nn.Linear layout). */
export interface FrozenWeight {
  /** 'f32' for dense float32, 'int8' etc. for quantised storage. */
  readonly kind: string;
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
    // transposeB: multiply by W^T without materialising the transpose.
    return tf.matMul(x, this.w, false, true);
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
          this.blocks.map((b) => tf.matMul(x, b, false, true)),
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

/** W [out, in] from host data: one tensor when it fits a storage binding, else row blocks. */
export function denseFromHost(data: Float32Array, shape: [number, number]): DenseWeight | BlockedDenseWeight {
  const [out, inp] = shape;
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
      const lead = x.shape.slice(0, -1);
      const x2 = x.reshape([-1, this.inFeatures]) as tf.Tensor2D;
      let y: tf.Tensor2D = this.weight.matmul(x2);
      if (this.bias) y = y.add(this.bias);
      const d = this.adapter?.delta(x2);
      if (d) y = y.add(d);
      return y.reshape([...lead, this.outFeatures]);
    });
  }

  /** Disposes the weight, bias and adapter (a tied weight must be disposed by its owner instead). */
  dispose(): void {
    this.weight.dispose();
    this.bias?.dispose();
    this.adapter?.dispose();
  }
}
