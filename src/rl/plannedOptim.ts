// Which path the learning step's optimiser update takes: on WebGPU (the optimizerPath option) the
// planned AdamW of src/engine/plan/adamwStep.ts, which reads the planned learning step's flat LoRA
// gradients in place and keeps the moments in flat GPU buffers between steps (the AdamW object's
// MomentHolder, so a checkpoint exports them and a tfjs update takes them back); elsewhere tfjs's
// AdamW (src/rl/optim.ts), the reference and the fallback.
import * as tf from '@tensorflow/tfjs';
import { engineOptions, plannedAdamWUpdate, type ExecutionPath, type AdamWStepResult } from '../engine/index';
import type { AdamW } from './optim';
import type { FlatGrads } from '../model/planned/learnStep';

/** Which path updates the parameters on WebGPU (EngineOptions.optimizerPath). */
export type OptimizerPath = ExecutionPath;

/** Whether learnStep's next update runs on the planned GPU optimiser. */
export function plannedOptimizerActive(): boolean {
  return engineOptions().optimizerPath === 'planned' && tf.getBackend() === 'webgpu';
}

/**
 * One clipped AdamW update of `vars` from `grads` on the GPU (plannedAdamWUpdate in
 * src/engine/plan/adamwStep.ts; `flat`: the planned learning step's flat LoRA gradients, read in
 * place). Returns the pre-clip global norm and whether the update was skipped.
 */
export function plannedUpdate(
  opt: AdamW,
  vars: Record<string, tf.Variable>,
  grads: tf.NamedTensorMap,
  lr: number,
  maxNorm: number,
  skip = false,
  flat?: FlatGrads,
): Promise<AdamWStepResult> {
  return plannedAdamWUpdate(opt, vars, grads, lr, maxNorm, skip, flat);
}
