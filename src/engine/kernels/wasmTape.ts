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

type TapeNode = { inputs: Record<string, tf.Tensor>; outputs: tf.Tensor[] };
/** Per tape, the ids of the tensors a variable reaches, extended as the tape grows. */
const reached = new WeakMap<TapeNode[], { upTo: number; ids: Set<number> }>();

/**
 * Whether a gradient may flow to x under the recording tape: x is a variable, or an output of a
 * taped op one of whose inputs a variable reaches (any variable: conservative). Outside a tape,
 * true. A taped op of ours that computes all its gradients in one kernel skips the input gradient
 * of an x that no variable reaches (tfjs would prune it from the backward and drop it).
 */
export function reachedByVariables(x: tf.Tensor): boolean {
  const tape = (tf.engine().state as unknown as { activeTape: TapeNode[] | null }).activeTape;
  if (!tape || tf.engine().state.gradientDepth === 0) return true;
  let r = reached.get(tape);
  if (!r) reached.set(tape, (r = { upTo: 0, ids: new Set() }));
  const from = (t: tf.Tensor) => t instanceof tf.Variable || r.ids.has(t.id);
  for (; r.upTo < tape.length; r.upTo++) {
    const node = tape[r.upTo];
    if (Object.values(node.inputs).some(from)) for (const o of node.outputs) r.ids.add(o.id);
  }
  return from(x);
}

/**
 * f with the gradient tape paused: its ops record no tape node and save no inputs (a taped op's
 * saved inputs are clones, an Identity kernel each on wasm). For values no gradient is asked of.
 */
export function untaped<T>(f: () => T): T {
  // As outside any gradient (a gradient inside f records on a tape of its own), then the tape back.
  const state = tf.engine().state as unknown as { gradientDepth: number; activeTape: unknown };
  const { gradientDepth, activeTape } = state;
  state.gradientDepth = 0;
  try {
    return f();
  } finally {
    state.gradientDepth = gradientDepth;
    state.activeTape = activeTape;
  }
}
