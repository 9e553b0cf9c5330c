// x W^T against a frozen weight-only-quantised W (int8 per channel or per group; int4 in groups of
// 32; f16 halves, two per word), differentiable in x. f16 is read with WGSL's core unpack2x16float
// rather than `enable f16`: shader-f16 is an optional feature (Dawn's and Chromium's SwiftShader
// adapters lack it), and packed halves halve the weight bytes on any adapter while the arithmetic
// and accumulation stay float32. On WebGPU: WGSL kernels that dequantise on the fly (a GEMV for the
// few rows of a decode step, a tiled GEMM for prefill and training, and the tiled backward for
// the gradient of x) so no float32 copy of W ever exists. Elsewhere: dequantise with stock ops
// (exact integer masks) and matMul.
import * as tf from '@tensorflow/tfjs';
import gemvWgsl from '../../../../shaders/matmul/op_gemv.wgsl?raw';
import gemvSplitKWgsl from '../../../../shaders/matmul/op_gemv_splitk.wgsl?raw';
import gemvWordWgsl from '../../../../shaders/matmul/op_gemv_word.wgsl?raw';
import tiledWgsl from '../../../../shaders/matmul/op_tiled.wgsl?raw';
import { customKernelsActive, runKernel, webgpuBackend } from '../../webgpu/wgslProgram';
import { engineOptions, type GemvVariant } from '../../options';
import { softwareAdapterName } from '../../../contract/backends';
import { WEIGHTS_PER_WORD, weightDecodeWgsl, type PackedWeightKind } from './weightDecode';

/** Storage of a quantised matrix W [outFeatures, inFeatures] (see src/model/quant.ts). */
export interface QuantizedMatrix {
  /** The format's kind (contract/weightFormat.ts); f16: IEEE halves, scales all 1 and groupSize = in. */
  kind: PackedWeightKind;
  /** int32 words: int8 -> [out, ceil(in/4)] (4 per word), int4 -> [out, in/8] (8 per word, q+8), f16 -> [out, ceil(in/2)] (first half low). */
  packed: tf.Tensor2D;
  /** float32 [out, in / groupSize] */
  scales: tf.Tensor2D;
  outFeatures: number;
  inFeatures: number;
  groupSize: number;
}

/** The decode kernel handles up to this many rows at once (the rollouts of one step). */
export const GEMV_MAX_ROWS = 8;
const GEMV_WG = 64;
const GEMV_SPLITK_WG = 32;

/** The host's constants ahead of a kernel: `extra` and the format's decode (weight_decode_<kind>.wgsl). */
function constants(w: QuantizedMatrix, extra = ''): string {
  return `${extra}\n${weightDecodeWgsl(w.kind)}`;
}

function uniforms(w: QuantizedMatrix, reduceDim?: number) {
  const u = [
    { type: 'int32' as const, data: [w.inFeatures] },
    { type: 'int32' as const, data: [w.groupSize] },
  ];
  if (reduceDim !== undefined) u.push({ type: 'int32' as const, data: [reduceDim] });
  return u;
}

function tiled(a: tf.Tensor2D, w: QuantizedMatrix, forward: boolean): tf.Tensor2D {
  const rows = a.shape[0];
  const cols = forward ? w.outFeatures : w.inFeatures;
  // One scale per packed word unless a group boundary falls inside a word (int8 with odd groups).
  const inGroup = w.groupSize % WEIGHTS_PER_WORD[w.kind] === 0;
  return runKernel(
    {
      key: `sparring_qmm_tiled_${w.kind}_${forward ? 'fwd' : 'bwd'}_g${inGroup ? 'w' : 'e'}`,
      source: `${constants(w, `const TRANS : bool = ${forward};\nconst WORD_IN_GROUP : bool = ${inGroup};`)}\n${tiledWgsl}`,
      inputs: ['a', 'packed', 'scales'],
      outputShape: [rows, cols],
      workgroupSize: [8, 8, 1],
      dispatch: [Math.ceil(cols / 32), Math.ceil(rows / 32), 1],
      uniforms: 'wIn : i32, groupSize : i32, reduceDim : i32,',
    },
    [a, w.packed, w.scales],
    'float32',
    uniforms(w, forward ? w.inFeatures : w.outFeatures),
  ) as tf.Tensor2D;
}

export type { GemvVariant };

/**
 * EngineOptions.gemvVariant where set (tests, benchmarks), else by EngineOptions.kernelVariants:
 * one thread per output on a software adapter (barriers are thread switches there), split-K
 * workgroups on a GPU (one thread per output leaves it idle: measured 0.4x of f32 on an H100).
 */
export function gemvVariant(): GemvVariant {
  const { gemvVariant: forced, kernelVariants } = engineOptions();
  if (forced) return forced;
  if (kernelVariants !== 'auto') return kernelVariants === 'gpu' ? 'splitk' : 'thread';
  const info = (webgpuBackend() as unknown as { adapterInfo?: { vendor?: string; architecture?: string } }).adapterInfo;
  return softwareAdapterName(info ?? {}) ? 'thread' : 'splitk';
}

function gemv(x: tf.Tensor2D, w: QuantizedMatrix): tf.Tensor2D {
  if (gemvVariant() === 'splitk') {
    return runKernel(
      {
        key: `sparring_qmm_gemv_splitk_${w.kind}_wg${GEMV_SPLITK_WG}_n${GEMV_MAX_ROWS}`,
        source: `${constants(w, `const WG : i32 = ${GEMV_SPLITK_WG};\nconst NMAX : i32 = ${GEMV_MAX_ROWS};`)}\n${gemvWordWgsl}\n${gemvSplitKWgsl}`,
        inputs: ['x', 'packed', 'scales'],
        outputShape: [x.shape[0], w.outFeatures],
        workgroupSize: [GEMV_SPLITK_WG, 1, 1],
        dispatch: [w.outFeatures, 1, 1],
        uniforms: 'wIn : i32, groupSize : i32,',
      },
      [x, w.packed, w.scales],
      'float32',
      uniforms(w),
    ) as tf.Tensor2D;
  }
  return runKernel(
    {
      key: `sparring_qmm_gemv_${w.kind}_wg${GEMV_WG}_n${GEMV_MAX_ROWS}`,
      source: `${constants(w, `const WG : i32 = ${GEMV_WG};\nconst NMAX : i32 = ${GEMV_MAX_ROWS};`)}\n${gemvWordWgsl}\n${gemvWgsl}`,
      inputs: ['x', 'packed', 'scales'],
      outputShape: [x.shape[0], w.outFeatures],
      workgroupSize: [GEMV_WG, 1, 1],
      dispatch: [Math.ceil(w.outFeatures / GEMV_WG), 1, 1],
      uniforms: 'wIn : i32, groupSize : i32,',
    },
    [x, w.packed, w.scales],
    'float32',
    uniforms(w),
  ) as tf.Tensor2D;
}

/** WGSL path: forward GEMV or tiled GEMM, backward tiled, as one differentiable op in x. */
export function quantMatmulWebGPU(x: tf.Tensor2D, w: QuantizedMatrix): tf.Tensor2D {
  const op = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const input = args[0] as tf.Tensor2D;
    return {
      value: input.shape[0] <= GEMV_MAX_ROWS ? gemv(input, w) : tiled(input, w, true),
      // W is frozen: only x gets a gradient, dx = dy W, still without a float32 W.
      gradFunc: (dy: tf.Tensor) => tiled(dy as tf.Tensor2D, w, false),
    };
  });
  return op(x) as tf.Tensor2D;
}

/**
 * W as float32 [out, in] through the backward GEMM, for tfjs-webgpu (no BitwiseAnd kernel): dy = rows
 * of the identity gives dy W = those rows of W exactly (one nonzero product per sum). Slices of
 * DENSE_ROWS rows bound the identity's size.
 */
const DENSE_ROWS = 256;
function dequantizeByGemm(w: QuantizedMatrix): tf.Tensor2D {
  return tf.tidy(() => {
    const parts: tf.Tensor2D[] = [];
    for (let r0 = 0; r0 < w.outFeatures; r0 += DENSE_ROWS) {
      const k = Math.min(DENSE_ROWS, w.outFeatures - r0);
      const eye = tf.oneHot(
        tf.range(r0, r0 + k, 1, 'int32') as tf.Tensor1D,
        w.outFeatures,
        1,
        0,
        'float32',
      ) as tf.Tensor2D;
      parts.push(tiled(eye, w, false));
    }
    return (parts.length === 1 ? parts[0] : tf.concat(parts, 0)) as tf.Tensor2D;
  });
}

/** W as float32 [out, in]: stock ops where the backend has BitwiseAnd (tfjs cpu, wasm), the GEMM on WebGPU. */
export function dequantizeStock(w: QuantizedMatrix): tf.Tensor2D {
  if (!tf.getKernel('BitwiseAnd', tf.getBackend())) {
    if (customKernelsActive()) return dequantizeByGemm(w);
    throw new Error(
      `${w.kind} weights on backend "${tf.getBackend()}" need the BitwiseAnd kernel or the WebGPU kernels; use the webgpu or cpu backend, or load without quantisation`,
    );
  }
  if (w.kind === 'f16') return tf.tidy(() => halvesStock(w).mul(w.scales) as tf.Tensor2D);
  const per = WEIGHTS_PER_WORD[w.kind];
  const bits = 32 / per;
  return tf.tidy(() => {
    const [out, words] = w.packed.shape;
    const parts: tf.Tensor[] = [];
    for (let j = 0; j < per; j++) {
      const shift = bits * j;
      // Mask field j in place: an exact multiple of 2^shift, exact in float32 after the cast.
      const mask = ((2 ** bits - 1) << shift) | 0;
      let f = tf
        .bitwiseAnd(w.packed, tf.fill([out, words], mask, 'int32'))
        .toFloat()
        .mul(2 ** -shift);
      // The top field of a word comes out signed (bit 31); the others unsigned.
      if (shift + bits === 32)
        f = f.add(
          f
            .less(0)
            .toFloat()
            .mul(2 ** bits),
        );
      if (w.kind === 'int8') f = f.sub(f.greaterEqual(128).toFloat().mul(256));
      else f = f.sub(8);
      parts.push(f);
    }
    const all = tf.stack(parts, 2).reshape([out, words * per]);
    const q = (words * per === w.inFeatures ? all : all.slice([0, 0], [out, w.inFeatures])) as tf.Tensor2D;
    const nG = w.inFeatures / w.groupSize;
    return q
      .reshape([out, nG, w.groupSize])
      .mul(w.scales.reshape([out, nG, 1]))
      .reshape([out, w.inFeatures]) as tf.Tensor2D;
  });
}

/**
 * The IEEE halves of f16 words as float32 [out, in], with exact float ops: the low and high 16-bit
 * fields masked out (multiples of 2^16 are exact in float32), then sign, exponent and mantissa
 * taken apart by powers of two (subnormals m * 2^-24, normals (1024 + m) * 2^(e - 25)).
 */
function halvesStock(w: QuantizedMatrix): tf.Tensor2D {
  const [out, words] = w.packed.shape;
  const lo = tf.bitwiseAnd(w.packed, tf.fill([out, words], 0xffff, 'int32')).toFloat();
  const hiSigned = tf
    .bitwiseAnd(w.packed, tf.fill([out, words], 0xffff0000 | 0, 'int32'))
    .toFloat()
    .mul(2 ** -16);
  const hi = hiSigned.add(hiSigned.less(0).toFloat().mul(65536));
  const all = tf.stack([lo, hi], 2).reshape([out, words * 2]);
  const h = words * 2 === w.inFeatures ? all : all.slice([0, 0], [out, w.inFeatures]);
  const neg = h.greaterEqual(32768).toFloat();
  const a = h.sub(neg.mul(32768));
  const e = a.div(1024).floor();
  const m = a.sub(e.mul(1024));
  const mag = tf.where(e.equal(0), m.mul(2 ** -24), m.add(1024).mul(tf.pow(2, e.sub(25))));
  return mag.mul(neg.mul(-2).add(1)) as tf.Tensor2D;
}

export function quantMatmulStock(x: tf.Tensor2D, w: QuantizedMatrix): tf.Tensor2D {
  return tf.tidy(() => tf.matMul(x, dequantizeStock(w), false, true));
}

export function quantMatmul(x: tf.Tensor2D, w: QuantizedMatrix): tf.Tensor2D {
  if (x.shape[1] !== w.inFeatures)
    throw new Error(`quantMatmul: x has ${x.shape[1]} features, W takes ${w.inFeatures}`);
  return customKernelsActive() ? quantMatmulWebGPU(x, w) : quantMatmulStock(x, w);
}
