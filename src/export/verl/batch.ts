// Batch arithmetic of a veRL job. veRL multiplies the actor's ppo_mini_batch_size (prompts) by
// rollout.n and divides it by the data-parallel ranks (fsdp_workers.py 241-242); the micro-batch
// per GPU must then divide that share (fsdp_workers.py 255), and prompts x n must divide by the GPU
// count (utils/config.py 115). The export picks one micro-batch that works for every GPU count of
// 1, 2, 4 and 8 the batch allows, so the README's scaling line needs no other override.

/** GPUs per node the README offers. */
export const GPU_COUNTS = [1, 2, 4, 8] as const;
/** The largest micro-batch per GPU the export writes (the sandbox models' and 0.5B models' memory at 8 x 512 tokens). */
export const MICRO_CAP = 8;

export interface VerlBatches {
  /** actor.ppo_mini_batch_size, in prompts. */
  miniPrompts: number;
  /** ppo_micro_batch_size_per_gpu (actor, critic) and the log-prob micro-batches. */
  micro: number;
  /** GPU counts of GPU_COUNTS whose per-GPU shares are whole and divisible by `micro`. */
  gpuCounts: number[];
}

/** The mini- and micro-batches of a run of `prompts` prompts x `n` samples in `miniBatches` optimiser steps. */
export function verlBatches(
  prompts: number,
  n: number,
  miniBatches: number,
  gpus: number,
  cap: number = MICRO_CAP,
): VerlBatches {
  if (!Number.isInteger(prompts / miniBatches))
    throw new Error(
      `export-verl: field "ppoMiniBatches" is ${miniBatches}, which does not divide the ${prompts} prompts of a step; veRL's ppo_mini_batch_size is a whole number of prompts`,
    );
  const miniPrompts = prompts / miniBatches;
  const gpuCounts: number[] = GPU_COUNTS.filter((g) => (prompts * n) % g === 0 && (miniPrompts * n) % g === 0);
  const share = (miniPrompts * n) / Math.max(...gpuCounts);
  let micro = 1;
  for (let d = Math.min(cap, share); d >= 1; d--)
    if (share % d === 0) {
      micro = d;
      break;
    }
  if (
    !gpuCounts.includes(gpus) &&
    !(Number.isInteger((prompts * n) / gpus) && Number.isInteger((miniPrompts * n) / gpus))
  )
    throw new Error(
      `export-verl: ${gpus} GPUs do not split a step's ${prompts} x ${n} samples (mini-batch ${miniPrompts} x ${n}) evenly; use one of ${gpuCounts.join(', ')}`,
    );
  if (!gpuCounts.includes(gpus)) {
    // A GPU count outside 1/2/4/8 (e.g. 3): the micro-batch must divide that share too.
    const own = (miniPrompts * n) / gpus;
    while (own % micro !== 0 || share % micro !== 0) micro--;
  }
  return { miniPrompts, micro, gpuCounts };
}
