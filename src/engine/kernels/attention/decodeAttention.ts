// decodeAttention(q [B, nH, D], k / v [B, nKv, C, D], bias [B, C], len) -> [B, nH, D]: one
// decode step's grouped-query attention over a KV cache filled up to `len` slots. On WebGPU it is
// one fused WGSL pass (shaders/attention/op.wgsl) that touches only the filled slots;
// elsewhere, and past the workgroup-memory budget for scores, the stock matMul/softmax path.
// Forward only: decoding is never differentiated (training runs the full-sequence forward).
import * as tf from '@tensorflow/tfjs';
import decodeAttentionWgsl from '../../../../shaders/attention/op.wgsl?raw';
import { customKernelsActive, runKernel, webgpuDevice } from '../../webgpu/wgslProgram';

const WG = 64;
/** Bytes of workgroup memory the kernel needs besides its scores (the reduction array). */
const REDUCTION_BYTES = WG * 4;

function checkShapes(q: tf.Tensor, k: tf.Tensor, v: tf.Tensor, bias: tf.Tensor, len: number): void {
  if (q.rank !== 3) throw new Error(`decodeAttention: q must be [batch, heads, headDim], got [${q.shape}]`);
  if (k.rank !== 4 || v.rank !== 4 || k.shape.some((s, i) => s !== v.shape[i])) {
    throw new Error(
      `decodeAttention: k and v must both be [batch, kvHeads, capacity, headDim], got [${k.shape}] and [${v.shape}]`,
    );
  }
  const [B, nH, D] = q.shape;
  const [kb, nKv, C, kd] = k.shape;
  if (kb !== B || kd !== D) throw new Error(`decodeAttention: k [${k.shape}] does not match q [${q.shape}]`);
  if (nH % nKv !== 0) throw new Error(`decodeAttention: ${nH} query heads are not a multiple of ${nKv} kv heads`);
  if (bias.rank !== 2 || bias.shape[0] !== B || bias.shape[1] !== C)
    throw new Error(`decodeAttention: bias must be [${B}, ${C}], got [${bias.shape}]`);
  if (!Number.isInteger(len) || len < 1 || len > C)
    throw new Error(`decodeAttention: len must be an integer in [1, ${C}], got ${len}`);
}

/** The obvious way with stock ops, over the whole capacity (masked slots weigh exp(-1e9) = 0). */
export function decodeAttentionStock(
  q: tf.Tensor3D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  bias: tf.Tensor2D,
  len: number,
): tf.Tensor3D {
  checkShapes(q, k, v, bias, len);
  const [B, nH, D] = q.shape;
  const [, nKv, C] = k.shape;
  const G = nH / nKv;
  return tf.tidy(() => {
    // Slots past len are padding by contract: mask them like the caller's bias does.
    const tail = len < C ? tf.concat([tf.zeros([B, len]), tf.fill([B, C - len], -1e9)], 1) : tf.zeros([B, C]);
    const qg = q.reshape([B, nKv, G, D]);
    const scores = tf.matMul(qg, k, false, true).mul(1 / Math.sqrt(D)); // [B, nKv, G, C]
    const p = tf.softmax(scores.add(bias.add(tail).reshape([B, 1, 1, C])), -1);
    return tf.matMul(p, v).reshape([B, nH, D]) as tf.Tensor3D;
  });
}

/** Longest fill level the fused kernel takes on this device (its scores sit in workgroup memory). */
export function decodeAttentionMaxLen(): number {
  const bytes = webgpuDevice().limits.maxComputeWorkgroupStorageSize;
  return Math.floor((bytes - REDUCTION_BYTES) / 4);
}

/** Score-array size compiled into the kernel: a power of two >= len, so few pipeline variants exist. */
function scoreCapacity(len: number): number {
  let c = 64;
  while (c < len) c *= 2;
  return c;
}

export function decodeAttentionWebGPU(
  q: tf.Tensor3D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  bias: tf.Tensor2D,
  len: number,
): tf.Tensor3D {
  checkShapes(q, k, v, bias, len);
  const [B, nH, D] = q.shape;
  const [, nKv, C] = k.shape;
  const cmax = Math.min(scoreCapacity(len), decodeAttentionMaxLen());
  if (len > cmax)
    throw new Error(`decodeAttention: ${len} slots exceed the ${cmax} that fit this device's workgroup memory`);
  return runKernel(
    {
      key: `sparring_decode_attention_wg${WG}_c${cmax}`,
      source: `const WG : i32 = ${WG};\nconst CMAX : i32 = ${cmax};\n${decodeAttentionWgsl}`,
      inputs: ['q', 'k', 'v', 'bias'],
      outputShape: [B, nH, D],
      workgroupSize: [WG, 1, 1],
      dispatch: [B * nH, 1, 1],
      uniforms: 'nHeads : i32, nKv : i32, headDim : i32, capacity : i32, len : i32, scale : f32,',
    },
    [q, k, v, bias],
    'float32',
    [
      { type: 'int32', data: [nH] },
      { type: 'int32', data: [nKv] },
      { type: 'int32', data: [D] },
      { type: 'int32', data: [C] },
      { type: 'int32', data: [len] },
      { type: 'float32', data: [1 / Math.sqrt(D)] },
    ],
  ) as tf.Tensor3D;
}

/** Whether decodeAttention takes the fused WGSL path for a cache filled to `len`. */
export function decodeAttentionFused(len: number): boolean {
  return customKernelsActive() && len <= decodeAttentionMaxLen();
}

export function decodeAttention(
  q: tf.Tensor3D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  bias: tf.Tensor2D,
  len: number,
): tf.Tensor3D {
  return decodeAttentionFused(len)
    ? decodeAttentionWebGPU(q, k, v, bias, len)
    : decodeAttentionStock(q, k, v, bias, len);
}
