// Weight-only int8 quantisation of the frozen projections, applied on load.
//
// Symmetric, per output channel (one scale per row of W [out, in]) or per group of `groupSize`
// consecutive input features: scale = max|w| / 127 over the group, q = round(w / scale) in
// [-127, 127] (round half away from zero), w ~ q * scale, so |w - q*scale| <= scale / 2.
//
// Storage (what a WGSL kernel reads): int32 tensor `packed` [out, ceil(in/4)], four consecutive
// input features per word, the first in the low byte (WGSL unpack4xI8 order; `in` is zero-padded
// to a multiple of 4), and float32 `scales` [out, in / groupSize]. 1 byte per weight plus scales.
// Held in blocks of output rows when the words would not fit one storage binding (PackedWeight).
//
// int4 (groups of 32 by default): q = round(w / scale) in [-8, 7], scale = max|w| / 7, stored as
// q + 8 in nibbles, eight per int32 word along the input, the first in the low nibble.
//
// f16: each weight rounded to the nearest IEEE half (ties to even), two per int32 word along the
// input, the first in the low 16 bits (WGSL unpack2x16float order), `packed` [out, ceil(in/2)],
// and a unit float32 scale per row so the kernels keep one binding layout for every packed format.
// A weight beyond +-65504 (the largest half) is refused, naming the tensor.
//
// Multiplication is the engine's quantMatmul: WGSL kernels on WebGPU that dequantise on the fly
// (decode GEMV, prefill/training GEMM, and the backward to x), stock-op dequantise-then-matmul
// elsewhere.

import * as tf from '@tensorflow/tfjs';
import { dequantizeStock, quantMatmul, rowChunks, type PackedWeightKind, type QuantizedMatrix } from '../engine/index';
import type { FrozenWeight } from './linear';
import type { LoadOptions } from './llama';
import { f16BitsToFloat, floatToF16Bits } from './safetensors';
import { weightSpec, type WeightFormat } from '../contract/weightFormat';

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

/**
 * A frozen weight held as packed integer words plus float32 scales (int8 or int4), in row blocks:
 * one block unless the packed words would exceed the device's storage-binding limit (an LM head of
 * a 150k vocabulary against a 128 MiB floor), then blocks of output rows that each fit, built from
 * the host arrays so no tensor over the limit ever exists; the product concatenates the blocks'.
 */
abstract class PackedWeight implements FrozenWeight {
  readonly outFeatures: number;
  readonly inFeatures: number;
  /** Row blocks [rows_i, in], top to bottom; each a QuantizedMatrix the kernels take whole. */
  readonly blocks: QuantizedMatrix[];

  protected constructor(
    readonly kind: PackedWeightKind,
    m: { out: number; in: number; groupSize: number; scales: Float32Array },
    words: Int32Array,
    readonly groupSize: number,
    readonly name: string,
  ) {
    this.outFeatures = m.out;
    this.inFeatures = m.in;
    const wordsPerRow = words.length / m.out;
    const scalesPerRow = m.in / m.groupSize;
    this.blocks = [];
    let r0 = 0;
    for (const rows of rowChunks(m.out, Math.max(wordsPerRow, scalesPerRow) * 4)) {
      this.blocks.push({
        kind,
        packed: tf.tensor2d(words.subarray(r0 * wordsPerRow, (r0 + rows) * wordsPerRow), [rows, wordsPerRow], 'int32'),
        scales: tf.tensor2d(m.scales.subarray(r0 * scalesPerRow, (r0 + rows) * scalesPerRow), [rows, scalesPerRow]),
        outFeatures: rows,
        inFeatures: m.in,
        groupSize: m.groupSize,
      });
      r0 += rows;
    }
  }

  get bytes(): number {
    return this.blocks.reduce((s, b) => s + b.packed.size * 4 + b.scales.size * 4, 0);
  }

  private rows(f: (b: QuantizedMatrix) => tf.Tensor2D): tf.Tensor2D {
    return this.blocks.length === 1
      ? f(this.blocks[0])
      : tf.tidy(() => tf.concat(this.blocks.map(f), 0) as tf.Tensor2D);
  }

  /** The stored values before scaling (integers, or the halves of f16) as float32 [out, in], exact. */
  unpack(): tf.Tensor2D {
    return this.rows((b) => tf.tidy(() => dequantizeStock({ ...b, scales: tf.onesLike(b.scales) })));
  }

  toDense(): tf.Tensor2D {
    return this.rows((b) => dequantizeStock(b));
  }

  matmul(x: tf.Tensor2D): tf.Tensor2D {
    if (this.blocks.length === 1) return quantMatmul(x, this.blocks[0]);
    return tf.tidy(
      () =>
        tf.concat(
          this.blocks.map((b) => quantMatmul(x, b)),
          1,
        ) as tf.Tensor2D,
    );
  }

  dispose(): void {
    for (const b of this.blocks) tf.dispose([b.packed, b.scales]);
  }
}

export class Int8Weight extends PackedWeight {
  constructor(m: QuantizedInt8, name = 'int8 weight') {
    super('int8', m, packInt8x4(m.q, m.out, m.in), m.groupSize, name);
  }

  static fromFloat32(w: Float32Array, shape: [number, number], opts: Int8Options = {}, name?: string): Int8Weight {
    return new Int8Weight(quantizeInt8(w, shape, opts), name);
  }
}

/** A LoadOptions.quantize hook: every projection (and an untied LM head) stored as int8. */
export function int8Quantizer(opts: Int8Options = {}): NonNullable<LoadOptions['quantize']> {
  return (name, w, shape) => Int8Weight.fromFloat32(w, shape, opts, name);
}

// ---------------------------------------------------------------------------------------------
// int4

export interface QuantizedInt4 {
  out: number;
  in: number;
  groupSize: number;
  /** [out * in] values in [-8, 7]. */
  q: Int8Array;
  /** [out * in / groupSize] */
  scales: Float32Array;
}

export const INT4_GROUP = 32;

/** Quantises W [out, in] to int4 in groups of `groupSize` (default 32) input features. */
export function quantizeInt4(w: Float32Array, shape: [number, number], groupSize = INT4_GROUP): QuantizedInt4 {
  const [out, inp] = shape;
  if (w.length !== out * inp) throw new Error(`quantizeInt4: ${w.length} values for shape [${out}, ${inp}]`);
  if (!Number.isInteger(groupSize) || groupSize % 8 !== 0 || inp % groupSize !== 0) {
    throw new Error(`quantizeInt4: groupSize ${groupSize} must be a multiple of 8 dividing the input size ${inp}`);
  }
  const nG = inp / groupSize;
  const q = new Int8Array(out * inp);
  const scales = new Float32Array(out * nG);
  for (let o = 0; o < out; o++) {
    for (let j = 0; j < nG; j++) {
      const base = o * inp + j * groupSize;
      let m = 0;
      for (let i = 0; i < groupSize; i++) m = Math.max(m, Math.abs(w[base + i]));
      const s = Math.fround(m / 7);
      scales[o * nG + j] = s;
      if (s === 0) continue;
      for (let i = 0; i < groupSize; i++) {
        const v = w[base + i] / s;
        q[base + i] = Math.max(-8, Math.min(7, Math.sign(v) * Math.round(Math.abs(v))));
      }
    }
  }
  return { out, in: inp, groupSize, q, scales };
}

/** Packs q [out, in] (in a multiple of 8) as q + 8 nibbles, eight per word, first in the low nibble. */
export function packInt4x8(q: Int8Array, out: number, inp: number): Int32Array {
  const words = inp / 8;
  const packed = new Int32Array(out * words);
  for (let o = 0; o < out; o++) {
    for (let k = 0; k < inp; k++) packed[o * words + (k >> 3)] |= ((q[o * inp + k] + 8) & 0xf) << (4 * (k & 7));
  }
  return packed;
}

export class Int4Weight extends PackedWeight {
  constructor(m: QuantizedInt4, name = 'int4 weight') {
    super('int4', m, packInt4x8(m.q, m.out, m.in), m.groupSize, name);
  }

  static fromFloat32(w: Float32Array, shape: [number, number], groupSize = INT4_GROUP, name?: string): Int4Weight {
    return new Int4Weight(quantizeInt4(w, shape, groupSize), name);
  }
}

/** A LoadOptions.quantize hook storing every projection (and an untied LM head) as int4. */
export function int4Quantizer(groupSize = INT4_GROUP): NonNullable<LoadOptions['quantize']> {
  return (name, w, shape) => Int4Weight.fromFloat32(w, shape, groupSize, name);
}

// ---------------------------------------------------------------------------------------------
// f16

/** The largest finite IEEE half. */
export const F16_MAX = 65504;

/**
 * W [out, in] rounded to halves and packed two per word [out, ceil(in/2)], the first in the low 16
 * bits. A value beyond +-65504 (or not finite) throws naming `name` and the element.
 * An F16 source decodes to float32 exactly and rounds back to the same bits, so it is not rounded twice.
 */
export function packF16x2(w: Float32Array, shape: [number, number], name = 'weight'): Int32Array {
  const [out, inp] = shape;
  if (w.length !== out * inp) throw new Error(`packF16x2: ${w.length} values for shape [${out}, ${inp}]`);
  const words = Math.ceil(inp / 2);
  const packed = new Int32Array(out * words);
  for (let o = 0; o < out; o++) {
    for (let k = 0; k < inp; k++) {
      const v = w[o * inp + k];
      if (!(Math.abs(v) <= F16_MAX)) {
        throw new Error(
          `${name}: weight ${v} at [${o}, ${k}] is beyond the f16 range +-${F16_MAX}; load this model in f32 or int8`,
        );
      }
      packed[o * words + (k >> 1)] |= floatToF16Bits(v) << (16 * (k & 1));
    }
  }
  return packed;
}

/** The halves of packF16x2's words as float32 [out * in] (host reference for tests). */
export function unpackF16x2(packed: Int32Array, out: number, inp: number): Float32Array {
  const words = Math.ceil(inp / 2);
  const w = new Float32Array(out * inp);
  for (let o = 0; o < out; o++) {
    for (let k = 0; k < inp; k++)
      w[o * inp + k] = f16BitsToFloat((packed[o * words + (k >> 1)] >>> (16 * (k & 1))) & 0xffff);
  }
  return w;
}

export class F16Weight extends PackedWeight {
  /** @param name the tensor, for the range error. */
  constructor(w: Float32Array, shape: [number, number], name = 'f16 weight') {
    const [out, inp] = shape;
    super(
      'f16',
      { out, in: inp, groupSize: inp, scales: new Float32Array(out).fill(1) },
      packF16x2(w, shape, name),
      inp,
      name,
    );
  }
}

/** A LoadOptions.quantize hook storing every projection (and an untied LM head) as packed halves. */
export function f16Quantizer(model = ''): NonNullable<LoadOptions['quantize']> {
  return (name, w, shape) => new F16Weight(w, shape, `${model ? `${model}: ` : ''}${name}.weight`);
}

/**
 * The loader hook that stores projections in `format` (undefined for f32). A projection whose
 * input size the group does not divide fails naming the model, the projection and the format.
 */
export function weightQuantizer(format: WeightFormat, model: string): LoadOptions['quantize'] {
  const spec = weightSpec(format);
  if (spec.kind === 'f32') return undefined;
  if (spec.kind === 'f16') return f16Quantizer(model);
  const inner = spec.kind === 'int8' ? int8Quantizer({}) : int4Quantizer(spec.groupSize);
  return (name, w, shape) => {
    if (spec.kind === 'int4' && shape[1] % spec.groupSize !== 0) {
      throw new Error(
        `${model}: weight format ${format} needs input sizes divisible by ${spec.groupSize}, but ${name} has ${shape[1]} inputs (pick int8 or a smaller group)`,
      );
    }
    return inner(name, w, shape);
  };
}
