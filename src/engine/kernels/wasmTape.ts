// The CPU side of the kernels' training path: on tfjs-wasm a gradient tape records every stock op
// and its autodiff backward, each a kernel call of ~50 us of overhead at the sandbox defender's
// sizes. Where an op has a closed-form backward (RMSNorm, RoPE, the gated MLP activations), one
// taped op with that backward takes 2-3x fewer kernels (rmsNorm 39 -> 17, rope 26 -> 10, swiglu
// 30 -> 15 for a forward and backward, counted with tf.profile).
import * as tf from '@tensorflow/tfjs';

/** Whether the backend is tfjs-wasm and a gradient tape records now. */
export function wasmTape(): boolean {
  return tf.getBackend() === 'wasm' && tf.engine().state.gradientDepth > 0;
}
