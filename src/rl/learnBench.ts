// Planned vs tfjs learning step in the same run (issue: the learning step at GPU speed): one
// learnStep (GRPO's PPO clip, token-mean) on a fixed scored batch, LoRA on every projection, timed
// on each path after a warm-up step, with what it asks of WebGPU.
import * as tf from '@tensorflow/tfjs';
import { countGpuWork } from '../engine/gpuCounters.ts';
import type { LlamaModel } from '../model/llama.ts';
import { attachLora } from '../model/lora.ts';
import { mulberry32 } from '../model/random.ts';
import { drawnAdapters } from './learnGradCheck.ts';
import { AdamW } from './optim.ts';
import { plannedMicroBatches, setLearnPath, type LearnPath } from './plannedLearn.ts';
import { learnStep, type LearnBatch, type LearnMetrics } from './trainer.ts';
import { fromRows } from './types.ts';
import type { StepProfileCase } from './stepProfile.ts';

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
  const responses = Array.from({ length: rows }, () => Array.from({ length: c.newTokens }, () => Math.floor(rand() * V)));
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
  const out: LearnBenchRow[] = [];
  for (const path of ['planned', 'tfjs'] as const) {
    const lora = attachLora(model, { r: c.rank, alpha: 2 * c.rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1, dropout: c.dropout ?? 0 });
    const optimizer = new AdamW({ lr: 1e-3 });
    setLearnPath(path);
    try {
      const step = () => learnStep({ model, lora, optimizer }, batch, { policyLoss: 'ppo' });
      await step();
      const times: number[] = [];
      let counts = null;
      for (let i = 0; i < reps; i++) {
        const r = await countGpuWork(step);
        times.push(r.counts.ms);
        counts = r.counts;
      }
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
      });
    } finally {
      setLearnPath('planned');
      optimizer.dispose();
      lora.dispose();
    }
  }
  return out;
}

/** The benchmark's case: 2 prompts x G 8 x (16 + 8) tokens, LoRA r 16 (bench:gpu --learn and bench --learn). */
export const LEARN_BENCH_CASE: StepProfileCase = { prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 };

export const LEARN_BENCH_HEADER = ['model', 'weights', 'path', 'learn ms', 'response tok/s', 'dispatches', 'submits', 'buffers created', 'readbacks', 'host ms'];

/** The table rows of one model's [planned, tfjs] result, with the tfjs / planned ratio. */
export function learnBenchRows(name: string, weights: string, r: LearnBenchRow[]): (string | number)[][] {
  const rows: (string | number)[][] = r.map((x) => [name, weights, x.path, x.ms, (x.tokens / x.ms) * 1000, x.dispatches, x.submits, x.buffersCreated, x.readbacks, x.hostMs]);
  const planned = r.find((x) => x.path === 'planned');
  const tfjs = r.find((x) => x.path === 'tfjs');
  if (planned && tfjs) rows.push([name, weights, 'tfjs / planned', tfjs.ms / planned.ms, '', '', '', '', '', '']);
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

const adapterValues = async (vars: tf.Variable[]) => (await Promise.all(vars.map((v) => v.data()))).flatMap((d) => Array.from(d));

/**
 * One learnStep on `path` on case c's fixed batch (importance-sampling loss, no clip, an entropy
 * bonus), from the same seeded adapters: what the two paths must agree on.
 */
export async function learnCheck(model: LlamaModel, path: LearnPath, c: StepProfileCase): Promise<LearnCheckResult> {
  const batch = benchLearnBatch(model, c);
  const lora = drawnAdapters(model, { r: c.rank, alpha: 2 * c.rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1, dropout: c.dropout ?? 0 });
  // eps far above |g|: AdamW's first step is then about lr * g / eps, linear in the gradient (with
  // the usual eps it is lr * sign(g), blind to a gradient of the wrong size).
  const optimizer = new AdamW({ lr: 1e4, eps: 1e4, weightDecay: 0 });
  setLearnPath(path);
  try {
    const before = await adapterValues(lora.variables());
    const n0 = plannedMicroBatches();
    const { result: metrics, counts } = await countGpuWork(() => learnStep({ model, lora, optimizer }, batch, { policyLoss: 'importance_sampling', entropyCoeff: 0.01, maxGradNorm: 1e9 }));
    const after = await adapterValues(lora.variables());
    return { path, plannedMicroBatches: plannedMicroBatches() - n0, dispatches: counts.dispatches, metrics, deltas: after.map((v, i) => v - before[i]) };
  } finally {
    setLearnPath('planned');
    optimizer.dispose();
    lora.dispose();
  }
}
