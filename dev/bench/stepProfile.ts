// Where one GRPO step's time goes (issue: the learning step at GPU speed, step 1): the step's own
// phase timings (rollout, score, learn), what it asks of WebGPU (dispatches, submits, buffers
// created, readbacks and the time spent waiting for them; host time = wall - waits), and tfjs's
// profile of the kernels it ran (count, GPU ms where timestamps exist, bytes allocated).
import * as tf from '@tensorflow/tfjs';
import { webgpuDevice, flushTfjs, engineOptions, setEngineOptions } from '../../src/engine/index';
import { countGpuWork, type GpuCounts } from './gpuCounters';
import type { LlamaModel } from '../../src/model/llama';
import { attachLora, type LoraSet } from '../../src/model/lora';
import { rlStep } from '../../src/rl/loop';
import { AdamW, clipByGlobalNorm } from '../../src/rl/optim';
import { plannedUpdate, type OptimizerPath } from '../../src/rl/plannedOptim';

export interface StepProfile {
  /** rlStep's own timings: rollout_ms, score_ms, learn_ms, total_ms (an unprofiled step). */
  phases: Record<string, number>;
  gpu: GpuCounts | null;
  /** tfjs's kernels of the next step, profiled (GPU ms where timestamps exist). */
  kernels: { name: string; count: number; gpuMs: number; bytes: number }[];
  tfjsKernels: number;
  peakBytes: number;
  newTensors: number;
}

export interface StepProfileCase {
  prompts: number;
  groupSize: number;
  promptLen: number;
  newTokens: number;
  rank: number;
  /** LoRA dropout (learnCheck); default 0. */
  dropout?: number;
}

/**
 * The benchmarks' GRPO step s: case c's group size and new tokens at temperature 1, GRPO advantages,
 * PPO's clipped loss, a reward of 1 for an even first response token (cheap, and it varies).
 */
export function benchGrpoStep(
  model: LlamaModel,
  lora: LoraSet,
  optimizer: AdamW,
  prompts: number[][],
  c: StepProfileCase,
): (s: number) => ReturnType<typeof rlStep> {
  return (s) =>
    rlStep(
      { learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) },
      prompts,
      s,
      {
        groupSize: c.groupSize,
        maxNewTokens: c.newTokens,
        temperature: 1,
        advantage: 'grpo',
        trainer: { policyLoss: 'ppo' },
      },
    );
}

/** One GRPO step (PPO loss, LoRA on every projection) after a warm-up step, profiled. */
export async function profileGrpoStep(model: LlamaModel, c: StepProfileCase): Promise<StepProfile> {
  const V = model.config.vocabSize;
  const prompts = Array.from({ length: c.prompts }, (_, b) =>
    Array.from({ length: c.promptLen }, (_, t) => (3 + 7 * t + 11 * b) % V),
  );
  const lora = attachLora(model, {
    r: c.rank,
    alpha: 2 * c.rank,
    targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
    seed: 1,
  });
  const optimizer = new AdamW({ lr: 1e-3 });
  const step = benchGrpoStep(model, lora, optimizer, prompts, c);
  try {
    await step(0); // warm-up: shaders, plans, buffer pools
    // Counted and timed on its own: tf.profile times every kernel with a query and a readback
    // of its own, which would swamp both the counts and the phases.
    let phases: Record<string, number> = {};
    let gpu: GpuCounts | null = null;
    if (tf.getBackend() === 'webgpu') {
      const r = await countGpuWork(() => step(1));
      gpu = r.counts;
      phases = { ...r.result.timings };
    } else {
      phases = { ...(await step(1)).timings };
    }
    const info = await tf.profile(async () => {
      await step(2);
      return tf.scalar(0);
    });
    (info.result as unknown as tf.Tensor).dispose();
    const agg = new Map<string, { name: string; count: number; gpuMs: number; bytes: number }>();
    for (const k of info.kernels) {
      const a = agg.get(k.name) ?? { name: k.name, count: 0, gpuMs: 0, bytes: 0 };
      a.count++;
      a.gpuMs += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
      a.bytes += k.bytesAdded > 0 ? k.bytesAdded : 0;
      agg.set(k.name, a);
    }
    return {
      phases,
      gpu,
      kernels: [...agg.values()].sort((a, b) => b.gpuMs - a.gpuMs || b.count - a.count),
      tfjsKernels: info.kernels.length,
      peakBytes: info.peakBytes,
      newTensors: info.newTensors,
    };
  } finally {
    optimizer.dispose();
    lora.dispose();
  }
}

/**
 * The optimiser update alone (global-norm clip, the skip check, AdamW) over gradients of LoRA r
 * `rank` on every projection, on one path, as learnStep runs it: WebGPU work per update, averaged
 * over `reps` updates after two warm-up ones, each waited for on the GPU. Needs the webgpu backend.
 */
export async function profileOptimizerUpdate(
  model: LlamaModel,
  rank: number,
  path: OptimizerPath,
  reps = 5,
): Promise<GpuCounts & { params: number }> {
  const lora = attachLora(model, {
    r: rank,
    alpha: 2 * rank,
    targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
    seed: 1,
  });
  const optimizer = new AdamW({ lr: 1e-3 });
  const vars: Record<string, tf.Variable> = {};
  for (const v of lora.variables()) vars[v.name] = v;
  const grads: tf.NamedTensorMap = {};
  for (const v of lora.variables()) grads[v.name] = tf.fill(v.shape, 1e-3);
  const before = engineOptions().optimizerPath;
  // Each update waits for the GPU to finish it (tfjs's AdamW is otherwise still queued when its
  // call returns, and its GPU time would land in whatever reads next).
  const update = async () => {
    if (path === 'planned') await plannedUpdate(optimizer, vars, grads, 1e-3, 1);
    else {
      const clipped = clipByGlobalNorm(grads, 1);
      if (Number.isFinite((await clipped.norm.data())[0])) optimizer.applyGradients(vars, clipped.grads, 1e-3);
      tf.dispose([...Object.values(clipped.grads), clipped.norm]);
    }
    flushTfjs();
    await webgpuDevice().queue.onSubmittedWorkDone();
  };
  try {
    setEngineOptions({ optimizerPath: path });
    await update();
    await update();
    const { counts } = await countGpuWork(async () => {
      for (let i = 0; i < reps; i++) await update();
    });
    const per = (x: number) => x / reps;
    return {
      ms: per(counts.ms),
      dispatches: per(counts.dispatches),
      submits: per(counts.submits),
      buffersCreated: per(counts.buffersCreated),
      bytesCreated: per(counts.bytesCreated),
      readbacks: per(counts.readbacks),
      readbackWaitMs: per(counts.readbackWaitMs),
      hostMs: per(counts.hostMs),
      params: lora.variables().reduce((n, v) => n + v.size, 0),
    };
  } finally {
    setEngineOptions({ optimizerPath: before });
    tf.dispose(Object.values(grads));
    optimizer.dispose();
    lora.dispose();
  }
}
