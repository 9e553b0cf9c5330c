// Planned vs tfjs learning step in the same run (issue: the learning step at GPU speed): one
// learnStep (GRPO's PPO clip, token-mean) on a fixed scored batch, LoRA on every projection, timed
// on each path after a warm-up step, with what it asks of WebGPU.
import { percentOf } from './gpuPeaks';
import * as tf from '@tensorflow/tfjs';
import { engineOptions, setEngineOptions } from '../../src/engine/index';
import { countGpuWork } from './gpuCounters';
import { heldBuffersCreated, tfjsHighWater } from './gpuMemory';
import { learnStepFlops } from './learnFlops';
import { releaseLearnPlans } from '../../src/model/planned/learn';
import { PROJ_NAMES } from '../../src/model/llama';
import type { LlamaModel } from '../../src/model/llama';
import { attachLora } from '../../src/model/lora';
import { mulberry32 } from '../../src/model/random';
import { drawnAdapters } from '../harness/learnGradCheck';
import { AdamW } from '../../src/rl/optim';
import { type LearnPath } from '../../src/rl/plannedLearn';
import { plannedMicroBatches } from '../../src/model/planned/learnStep';
import { learnStep, type LearnBatch, type LearnMetrics } from '../../src/rl/trainer';
import { fromRows } from '../../src/rl/types';
import { benchGrpoStep, type StepProfileCase } from './stepProfile';

export interface LearnBenchRow {
  path: LearnPath;
  /** Median wall ms of one learnStep. */
  ms: number;
  tokens: number;
  dispatches: number;
  submits: number;
  buffersCreated: number;
  readbacks: number;
  hostMs: number;
  /** FLOPs of one step (dev/bench/learnFlops.ts, the same count on both paths). */
  flops: number;
  /**
   * GPU bytes the step holds beyond the model and its adapters: buffers created outside tfjs's pool
   * by the warm-up step and still alive (the learn plans, the planned optimiser's state), plus tfjs's
   * in-use high-water mark above its start in the timed steps (dev/bench/gpuMemory.ts); null off WebGPU.
   */
  peakBytes: number | null;
}

/** A scored batch of the case's shape: prompts x G rows, random responses and advantages. */
export function benchLearnBatch(model: LlamaModel, c: StepProfileCase): LearnBatch {
  const V = model.config.vocabSize;
  const rand = mulberry32(7);
  const rows = c.prompts * c.groupSize;
  const prompts = Array.from({ length: rows }, (_, r) => {
    const b = Math.floor(r / c.groupSize);
    // Prompts of different lengths, so rows are left-padded as in a real batch.
    return Array.from({ length: c.promptLen - (b % 3) }, (_, t) => (3 + 7 * t + 11 * b) % V);
  });
  const responses = Array.from({ length: rows }, () =>
    Array.from({ length: c.newTokens }, () => Math.floor(rand() * V)),
  );
  const mask = responses.map((r) => r.map(() => 1));
  const adv = Array.from({ length: rows }, () => (rand() < 0.5 ? -1 : 1));
  return {
    prompts,
    responses,
    mask,
    oldLogp: fromRows(responses.map((r) => r.map(() => -Math.log(V)))),
    advantages: fromRows(responses.map((r, i) => r.map(() => adv[i]))),
  };
}

/** learnStep on both paths, `reps` timed steps each after one warm-up step (medians). */
export async function benchLearnPaths(model: LlamaModel, c: StepProfileCase, reps: number): Promise<LearnBenchRow[]> {
  const batch = benchLearnBatch(model, c);
  const flops = learnStepFlops(
    model.config,
    { r: c.rank, targets: PROJ_NAMES },
    {
      rows: batch.prompts.length,
      promptLen: Math.max(...batch.prompts.map((p) => p.length)),
      responseLen: c.newTokens,
    },
  ).total;
  const out: LearnBenchRow[] = [];
  for (const path of ['planned', 'tfjs'] as const) {
    const lora = attachLora(model, {
      r: c.rank,
      alpha: 2 * c.rank,
      targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
      seed: 1,
      dropout: c.dropout ?? 0,
    });
    const optimizer = new AdamW({ lr: 1e-3 });
    setEngineOptions({ learnPath: path });
    // The warm-up builds this path's plans afresh, so what they hold is counted.
    releaseLearnPlans(model);
    try {
      const step = () => learnStep({ model, lora, optimizer }, batch, { policyLoss: 'ppo' });
      const onWebGpu = tf.getBackend() === 'webgpu';
      const n0 = plannedMicroBatches();
      const held = onWebGpu ? (await heldBuffersCreated(step)).bytes : (await step(), 0);
      const perStep = plannedMicroBatches() - n0;
      if (path === 'planned' && onWebGpu) plannedOrThrow(perStep, 'the learn step');
      const times: number[] = [];
      let counts = null;
      let high: number | null = null;
      for (let i = 0; i < reps; i++) {
        const { result: r, bytes } = await tfjsHighWater(() => countGpuWork(step));
        times.push(r.counts.ms);
        counts = r.counts;
        if (bytes !== null) high = Math.max(high ?? 0, bytes);
      }
      if (path === 'planned' && onWebGpu && plannedMicroBatches() - n0 !== perStep * (reps + 1))
        throw new Error(
          `the planned learn step fell back to tfjs in a timed step (${plannedMicroBatches() - n0} planned micro-batches in ${reps + 1} steps of ${perStep}): its row would time tfjs`,
        );
      times.sort((a, b) => a - b);
      out.push({
        path,
        ms: times[Math.floor(times.length / 2)],
        tokens: batch.prompts.length * c.newTokens,
        dispatches: counts!.dispatches,
        submits: counts!.submits,
        buffersCreated: counts!.buffersCreated,
        readbacks: counts!.readbacks,
        hostMs: counts!.hostMs,
        flops,
        peakBytes: onWebGpu ? held + (high ?? 0) : null,
      });
    } finally {
      setEngineOptions({ learnPath: 'planned' });
      optimizer.dispose();
      lora.dispose();
    }
  }
  return out;
}

/** A planned row that ran on tfjs (the plan refused, a forward failed) would time tfjs under the planned label: an error. */
function plannedOrThrow(microBatches: number, what: string): void {
  if (microBatches === 0)
    throw new Error(
      `${what} on the planned path fell back to tfjs (no micro-batch ran planned; the console says why): its row would time tfjs`,
    );
}

/** The benchmark's case, issue 21's: 8 prompts x G 8 x (64 + 64) tokens, LoRA r 16 on every projection. */
export const LEARN_BENCH_CASE: StepProfileCase = { prompts: 8, groupSize: 8, promptLen: 64, newTokens: 64, rank: 16 };

/** A case from `PxGxN+T` (prompts x group size x prompt tokens + new tokens), LoRA r 16: `2x8x16+8`. */
export function parseLearnCase(s: string): StepProfileCase {
  const m = /^(\d+)x(\d+)x(\d+)\+(\d+)$/.exec(s.trim());
  if (!m || m.slice(1).some((x) => Number(x) < 1))
    throw new Error(
      `--learn-shape: expected PROMPTSxGROUPxPROMPT_TOKENS+NEW_TOKENS with positive numbers (e.g. 8x8x64+64), got "${s}"`,
    );
  return { prompts: Number(m[1]), groupSize: Number(m[2]), promptLen: Number(m[3]), newTokens: Number(m[4]), rank: 16 };
}

export const LEARN_BENCH_HEADER = [
  'model',
  'weights',
  'path',
  'learn ms',
  'response tok/s',
  'GFLOP/s',
  '% matmul roofline',
  '% of f32 peak',
  'peak MiB',
  'dispatches',
  'submits',
  'buffers created',
  'readbacks',
  'host ms',
];

/**
 * The table rows of one model's [planned, tfjs] result, with the tfjs / planned ratio;
 * `matmulGflops` the measured roofline, `peakGflops` the GPU's published f32 peak (dev/bench/gpuPeaks.ts).
 */
export function learnBenchRows(
  name: string,
  weights: string,
  r: LearnBenchRow[],
  matmulGflops?: number,
  peakGflops?: number,
): (string | number)[][] {
  const rows: (string | number)[][] = r.map((x) => {
    const gflops = x.flops / (x.ms / 1000) / 1e9;
    const pct = matmulGflops ? `${((100 * gflops) / matmulGflops).toFixed(1)}%` : '-';
    return [
      name,
      weights,
      x.path,
      x.ms,
      (x.tokens / x.ms) * 1000,
      gflops,
      pct,
      percentOf(gflops, peakGflops),
      x.peakBytes === null ? '-' : x.peakBytes / 2 ** 20,
      x.dispatches,
      x.submits,
      x.buffersCreated,
      x.readbacks,
      x.hostMs,
    ];
  });
  const planned = r.find((x) => x.path === 'planned');
  const tfjs = r.find((x) => x.path === 'tfjs');
  if (planned && tfjs) {
    const mem = planned.peakBytes && tfjs.peakBytes ? tfjs.peakBytes / planned.peakBytes : '';
    rows.push([name, weights, 'tfjs / planned', tfjs.ms / planned.ms, '', '', '', '', mem, '', '', '', '', '']);
  }
  return rows;
}

/** The table's title line for case c. */
export const learnBenchTitle = (where: string, c: StepProfileCase) =>
  `== ${where}: one learnStep (PPO clip, token-mean), ${c.prompts} prompts x G ${c.groupSize} x (${c.promptLen} + ${c.newTokens}) tokens, LoRA r ${c.rank} on every projection; medians after a warm-up step`;

export interface LearnCheckResult {
  path: LearnPath;
  /** Micro-batches that ran on the planned pass (0: the tfjs path ran, also by a silent fallback). */
  plannedMicroBatches: number;
  dispatches: number;
  metrics: LearnMetrics;
  /** Every adapter value's change in the step (A then B per adapter). */
  deltas: number[];
}

const adapterValues = async (vars: tf.Variable[]) =>
  (await Promise.all(vars.map((v) => v.data()))).flatMap((d) => Array.from(d));

/**
 * One learnStep on `path` on case c's fixed batch (importance-sampling loss, no clip, an entropy
 * bonus), from the same seeded adapters: what the two paths must agree on.
 */
export async function learnCheck(model: LlamaModel, path: LearnPath, c: StepProfileCase): Promise<LearnCheckResult> {
  const batch = benchLearnBatch(model, c);
  const lora = drawnAdapters(model, {
    r: c.rank,
    alpha: 2 * c.rank,
    targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
    seed: 1,
    dropout: c.dropout ?? 0,
  });
  // eps far above |g|: AdamW's first step is then about lr * g / eps, linear in the gradient (with
  // the usual eps it is lr * sign(g), blind to a gradient of the wrong size).
  const optimizer = new AdamW({ lr: 1e4, eps: 1e4, weightDecay: 0 });
  setEngineOptions({ learnPath: path });
  try {
    const before = await adapterValues(lora.variables());
    const n0 = plannedMicroBatches();
    const { result: metrics, counts } = await countGpuWork(() =>
      learnStep({ model, lora, optimizer }, batch, {
        policyLoss: 'importance_sampling',
        entropyCoeff: 0.01,
        maxGradNorm: 1e9,
      }),
    );
    const after = await adapterValues(lora.variables());
    return {
      path,
      plannedMicroBatches: plannedMicroBatches() - n0,
      dispatches: counts.dispatches,
      metrics,
      deltas: after.map((v, i) => v - before[i]),
    };
  } finally {
    setEngineOptions({ learnPath: 'planned' });
    optimizer.dispose();
    lora.dispose();
  }
}

/** One way of running a whole GRPO step: everything planned (the default on WebGPU) or everything tfjs. */
export interface StepBenchRow {
  path: 'planned' | 'tfjs';
  /** Medians of rlStep's own phase timings. */
  rolloutMs: number;
  learnMs: number;
  totalMs: number;
  dispatches: number;
}

/** Sets every switch of a GRPO step's WebGPU work (prefill, decode, learn, optimiser) to one path; returns the undo. */
function allOnPath(p: 'planned' | 'tfjs'): () => void {
  const [d, o] = [engineOptions().decodePath, engineOptions().optimizerPath];
  setEngineOptions({ decodePath: p, prefillPath: p, learnPath: p, optimizerPath: p });
  return () => {
    setEngineOptions({ decodePath: d, prefillPath: 'planned', learnPath: 'planned', optimizerPath: o });
  };
}

/**
 * A whole GRPO step (rollout of c.prompts x G c.groupSize x c.newTokens new tokens, scoring, the
 * learning step with GRPO's PPO clip) on each path, `reps` timed steps after a warm-up step.
 */
export async function benchGrpoStepPaths(model: LlamaModel, c: StepProfileCase, reps: number): Promise<StepBenchRow[]> {
  const V = model.config.vocabSize;
  const prompts = Array.from({ length: c.prompts }, (_, b) =>
    Array.from({ length: c.promptLen - (b % 3) }, (_, t) => (3 + 7 * t + 11 * b) % V),
  );
  const out: StepBenchRow[] = [];
  for (const path of ['planned', 'tfjs'] as const) {
    const undo = allOnPath(path);
    const lora = attachLora(model, {
      r: c.rank,
      alpha: 2 * c.rank,
      targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'],
      seed: 1,
    });
    const optimizer = new AdamW({ lr: 1e-3 });
    try {
      const step = benchGrpoStep(model, lora, optimizer, prompts, c);
      const n0 = plannedMicroBatches();
      await step(0);
      if (path === 'planned' && tf.getBackend() === 'webgpu')
        plannedOrThrow(plannedMicroBatches() - n0, 'the GRPO step');
      const t: Record<'rollout' | 'learn' | 'total' | 'dispatches', number[]> = {
        rollout: [],
        learn: [],
        total: [],
        dispatches: [],
      };
      for (let i = 0; i < reps; i++) {
        const { result, counts } = await countGpuWork(() => step(i + 1));
        t.rollout.push(result.timings.rollout_ms);
        t.learn.push(result.timings.learn_ms);
        t.total.push(result.timings.total_ms);
        t.dispatches.push(counts.dispatches);
      }
      const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      out.push({
        path,
        rolloutMs: med(t.rollout),
        learnMs: med(t.learn),
        totalMs: med(t.total),
        dispatches: med(t.dispatches),
      });
    } finally {
      undo();
      optimizer.dispose();
      lora.dispose();
    }
  }
  return out;
}

export const STEP_BENCH_HEADER = [
  'model',
  'weights',
  'path',
  'rollout ms',
  'learn ms',
  'whole step ms',
  'dispatches',
  'tfjs / planned',
];

export function stepBenchRows(name: string, weights: string, r: StepBenchRow[]): (string | number)[][] {
  const planned = r.find((x) => x.path === 'planned');
  return r.map((x) => [
    name,
    weights,
    x.path,
    x.rolloutMs,
    x.learnMs,
    x.totalMs,
    x.dispatches,
    x.path === 'tfjs' && planned ? `${(x.totalMs / planned.totalMs).toFixed(2)}x` : '',
  ]);
}

export const stepBenchTitle = (where: string, c: StepProfileCase) =>
  `== ${where}: one whole GRPO step (rollout + score + learn), ${c.prompts} prompts x G ${c.groupSize} x (${c.promptLen} + ${c.newTokens}) tokens, LoRA r ${c.rank} on every projection; medians after a warm-up step`;
