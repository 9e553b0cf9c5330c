// Planned vs tfjs learning step in the same run (issue: the learning step at GPU speed): one
// learnStep (GRPO's PPO clip, token-mean) on a fixed scored batch, LoRA on every projection, timed
// on each path after a warm-up step, with what it asks of WebGPU.
import { countGpuWork } from '../engine/gpuCounters.ts';
import type { LlamaModel } from '../model/llama.ts';
import { attachLora } from '../model/lora.ts';
import { mulberry32 } from '../model/random.ts';
import { AdamW } from './optim.ts';
import { setLearnPath, type LearnPath } from './plannedLearn.ts';
import { learnStep, type LearnBatch } from './trainer.ts';
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
    const lora = attachLora(model, { r: c.rank, alpha: 2 * c.rank, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
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
