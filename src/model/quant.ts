// Weight-only int8 quantisation of the frozen projections, applied on load.
//
// Symmetric, per output channel (one scale per row of W [out, in]) or per group of `groupSize`
// consecutive input features: scale = max|w| / 127 over the group, q = round(w / scale) in
// [-127, 127] (round half away from zero), w ~ q * scale, so |w - q*scale| <= scale / 2.
//
// Storage (what a WGSL kernel reads): int32 tensor `packed` [out, ceil(in/4)], four consecutive
// input features per word, the first in the low byte (WGSL unpack4xI8 order; `in` is zero-padded
// to a multiple of 4), and float32 `scales` [out, in / groupSize]. 1 byte per weight plus scales.
//
// The stock-op matmul dequantises to a transient float32 W with exact integer masks (BitwiseAnd:
// each masked byte is a multiple of a power of two, so its float32 value is exact) and multiplies.
// Backends without BitwiseAnd (tfjs WebGPU 4.22) need a fused kernel: register one with
// setInt8Matmul (the engine layer owns WGSL).

import * as tf from '@tensorflow/tfjs';
import type { FrozenWeight } from './linear.ts';
import type { LoadOptions } from './llama.ts';

export interface Int8Options {
  /** Input features per scale; 0 or undefined = one scale per output channel. Must divide `in`. */
  groupSize?: number;
}

/** Host-side quantised matrix. */
export interface QuantizedInt8 {
  out: number;
  in: number;
  groupSize: number;
  /** [out * in] values in [-127, 127]. */
  q: Int8Array;
  /** [out * in / groupSize] */
  scales: Float32Array;
}

/** Quantises W [out, in] (row-major float32). */
export function quantizeInt8(w: Float32Array, shape: [number, number], opts: Int8Options = {}): QuantizedInt8 {
  const [out, inp] = shape;
  if (w.length !== out * inp) throw new Error(`quantizeInt8: ${w.length} values for shape [${out}, ${inp}]`);
  const g = opts.groupSize || inp;
  if (!Number.isInteger(g) || g <= 0 || inp % g !== 0) {
    throw new Error(`quantizeInt8: groupSize ${opts.groupSize} must be a positive divisor of the input size ${inp}`);
  }
  const nG = inp / g;
  const q = new Int8Array(out * inp);
  const scales = new Float32Array(out * nG);
  for (let o = 0; o < out; o++) {
    for (let j = 0; j < nG; j++) {
      const base = o * inp + j * g;
      let m = 0;
      for (let i = 0; i < g; i++) m = Math.max(m, Math.abs(w[base + i]));
      // An all-zero group gets scale 0 and q 0 (dequantises to exact zeros).
      const s = Math.fround(m / 127);
      scales[o * nG + j] = s;
      if (s === 0) continue;
      for (let i = 0; i < g; i++) {
        const v = w[base + i] / s;
        q[base + i] = Math.max(-127, Math.min(127, Math.sign(v) * Math.round(Math.abs(v))));
      }
    }
  }
  return { out, in: inp, groupSize: g, q, scales };
}

/** q * scale on the host (reference for tests and export). */
export function dequantizeInt8(m: QuantizedInt8): Float32Array {
  const w = new Float32Array(m.out * m.in);
  const nG = m.in / m.groupSize;
  for (let o = 0; o < m.out; o++) {
    for (let i = 0; i < m.in; i++) w[o * m.in + i] = m.q[o * m.in + i] * m.scales[o * nG + Math.floor(i / m.groupSize)];
  }
  return w;
}

/** Packs q [out, in] into int32 words [out, ceil(in/4)], four per word, first in the low byte. */
export function packInt8x4(q: Int8Array, out: number, inp: number): Int32Array {
  const words = Math.ceil(inp / 4);
  const packed = new Int32Array(out * words);
  for (let o = 0; o < out; o++) {
    for (let k = 0; k < inp; k++) {
      packed[o * words + (k >> 2)] |= (q[o * inp + k] & 0xff) << (8 * (k & 3));
    }
  }
  return packed;
}

export type Int8MatmulFn = (x: tf.Tensor2D, w: Int8Weight) => tf.Tensor2D;
let int8MatmulOverride: Int8MatmulFn | null = null;

/** Installs a fused int8 matmul (e.g. a WGSL kernel) used instead of dequantise-then-matmul. */
export function setInt8Matmul(fn: Int8MatmulFn | null): void {
  int8MatmulOverride = fn;
}

export class Int8Weight implements FrozenWeight {
  readonly kind = 'int8';
  readonly outFeatures: number;
  readonly inFeatures: number;
  readonly groupSize: number;
  /** int32 [out, ceil(in/4)] */
  readonly packed: tf.Tensor2D;
  /** float32 [out, in / groupSize] */
  readonly scales: tf.Tensor2D;

  constructor(m: QuantizedInt8, readonly name = 'int8 weight') {
    this.outFeatures = m.out;
    this.inFeatures = m.in;
    this.groupSize = m.groupSize;
    this.packed = tf.tensor2d(packInt8x4(m.q, m.out, m.in), [m.out, Math.ceil(m.in / 4)], 'int32');
    this.scales = tf.tensor2d(m.scales, [m.out, m.in / m.groupSize]);
  }

  static fromFloat32(w: Float32Array, shape: [number, number], opts: Int8Options = {}, name?: string): Int8Weight {
    return new Int8Weight(quantizeInt8(w, shape, opts), name);
  }

  get bytes(): number {
    return this.packed.size * 4 + this.scales.size * 4;
  }

  /** The int8 values as float32 [out, in] (exact), from the packed words. */
  unpack(): tf.Tensor2D {
    if (!tf.getKernel('BitwiseAnd', tf.getBackend())) {
      throw new Error(
        `${this.name}: int8 weights need the BitwiseAnd kernel or a fused int8 matmul (setInt8Matmul); backend "${tf.getBackend()}" has neither`,
      );
    }
    return tf.tidy(() => {
      const [out, words] = this.packed.shape;
      const bytes: tf.Tensor[] = [];
      for (let k = 0; k < 4; k++) {
        // Mask byte k in place: an exact multiple of 2^(8k), exact in float32 after the cast.
        const mask = k === 3 ? -16777216 /* 0xff000000 as int32 */ : 0xff << (8 * k);
        // BitwiseAnd does not broadcast: the mask is a full-shape tensor.
        let b = tf.bitwiseAnd(this.packed, tf.fill([out, words], mask, 'int32')).toFloat().mul(2 ** (-8 * k));
        // Bytes 0-2 come out unsigned (0..255): fold 128..255 to -128..-1. Byte 3 is already signed.
        if (k < 3) b = b.sub(b.greaterEqual(128).toFloat().mul(256));
        bytes.push(b);
      }
      const all = tf.stack(bytes, 2).reshape([out, words * 4]);
      return (words * 4 === this.inFeatures ? all : all.slice([0, 0], [out, this.inFeatures])) as tf.Tensor2D;
    });
  }

  toDense(): tf.Tensor2D {
    return tf.tidy(() => {
      const nG = this.inFeatures / this.groupSize;
      return this.unpack()
        .reshape([this.outFeatures, nG, this.groupSize])
        .mul(this.scales.reshape([this.outFeatures, nG, 1]))
        .reshape([this.outFeatures, this.inFeatures]) as tf.Tensor2D;
    });
  }

  matmul(x: tf.Tensor2D): tf.Tensor2D {
    if (int8MatmulOverride) return int8MatmulOverride(x, this);
    return tf.tidy(() => tf.matMul(x, this.toDense(), false, true));
  }

  dispose(): void {
    this.packed.dispose();
    this.scales.dispose();
  }
}

/** A LoadOptions.quantize hook: every projection (and an untied LM head) stored as int8. */
export function int8Quantizer(opts: Int8Options = {}): NonNullable<LoadOptions['quantize']> {
  return (name, w, shape) => Int8Weight.fromFloat32(w, shape, opts, name);
}
