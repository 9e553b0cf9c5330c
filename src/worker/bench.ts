// Kernel benchmarks inside the worker: each custom kernel beside the same work done with stock
// tfjs ops, medians over repeated runs after a warm-up, GPU work awaited through a readback of
// the (small) outputs on both sides.
import * as tf from '@tensorflow/tfjs';
import { sampleTokens } from '../engine/ops/sample';
import { sampleReference } from '../engine/ops/sampleReference';
import { tokenStats, tokenStatsStock } from '../engine/ops/tokenStats';
import { seededLogits } from '../engine/testing/seededLogits';
import { median } from '../model/throughput';
import { Int4Weight, Int8Weight } from '../model/quant';
import { mulberry32 } from '../engine/testing/seededLogits';
import { setCustomKernels } from '../engine/kernels/wgslProgram';
import { generate } from '../model/generate';
import type { LlamaModel } from '../model/llama';
import { attachLora } from '../model/lora';
import { rlStep } from '../rl/loop';
import { AdamW } from '../rl/optim';
import type { KernelBenchRow } from './protocol';

async function time(reps: number, fn: () => tf.Tensor | Promise<tf.Tensor>): Promise<number> {
  const once = async () => {
    const t0 = performance.now();
    const out = await fn();
    await out.data();
    out.dispose();
    return performance.now() - t0;
  };
  await once(); // warm-up: shader compile, buffer pool
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) ms.push(await once());
  return median(ms);
}

/** SmolLM2-135M's MLP up-projection [1536, 576]: decode rows 1 and 8, a prefill of 128 rows. */
async function benchQuantMatmul(reps: number, rows: KernelBenchRow[]): Promise<void> {
  const [out, inF] = [1536, 576];
  const rand = mulberry32(3);
  const w = Float32Array.from({ length: out * inF }, () => (rand() * 2 - 1) * 0.05);
  const dense = tf.tensor2d(w, [out, inF]);
  const weights = [Int8Weight.fromFloat32(w, [out, inF]), Int4Weight.fromFloat32(w, [out, inF], 32)];
  for (const n of [1, 8, 128]) {
    const x = tf.randomUniform([n, inF], -1, 1, 'float32', 5) as tf.Tensor2D;
    // The obvious way: keep W in float32 and call matMul.
    const stockMs = await time(reps, () => tf.matMul(x, dense, false, true));
    for (const q of weights) {
      rows.push({
        name: `matmul int${q.bits} ${n <= 8 ? '(GEMV)' : '(tiled)'} vs f32`,
        shape: `${n}x${inF} . ${out}x${inF}^T`,
        oursMs: await time(reps, () => q.matmul(x)),
        stockMs,
        bytes: q.bytes,
      });
    }
    x.dispose();
  }
  weights.forEach((q) => q.dispose());
  dense.dispose();
}

export async function benchKernels(reps: number): Promise<KernelBenchRow[]> {
  const rows: KernelBenchRow[] = [];
  await benchQuantMatmul(reps, rows);
  for (const [r, v] of [[8, 49152], [8, 151936]] as const) {
    const c = seededLogits(r, v, 9);
    const logits = tf.tensor2d(c.logits, [r, v]);
    const ids = tf.tensor1d(c.ids, 'int32');
    const bytes = r * v * 4;
    const ours = await time(reps, () => tokenStats(logits, ids));
    const stock = await time(reps, () => tokenStatsStock(logits, ids));
    rows.push({ name: 'token stats (logp + entropy)', shape: `${r}x${v}`, oursMs: ours, stockMs: stock, bytes });

    const dy = tf.ones([r, 2]);
    const grad = (f: typeof tokenStats) => () => tf.grad((x: tf.Tensor) => tf.sum(tf.mul(f(x as tf.Tensor2D, ids), dy)))(logits);
    rows.push({
      name: 'token stats backward',
      shape: `${r}x${v}`,
      oursMs: await time(reps, grad(tokenStats)),
      stockMs: await time(reps, grad(tokenStatsStock)),
      bytes: 2 * bytes,
    });

    const opts = { temperature: 0.7, topK: 50, topP: 0.9, seed: 1, step: 0 };
    rows.push({
      name: 'sample top-k 50 / top-p 0.9',
      shape: `${r}x${v}`,
      oursMs: await time(reps, () => sampleTokens(logits, opts)),
      // The obvious way: read the logits back and sample on the CPU.
      stockMs: await time(reps, async () => tf.tensor1d(sampleReference(await logits.data(), r, v, opts), 'int32')),
      bytes,
    });
    tf.dispose([logits, ids, dy]);
  }
  return rows;
}

async function timeAsync(reps: number, fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm-up
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/**
 * Whole steps with the custom kernels on (ours) and off (stock tfjs ops everywhere): a sampled
 * decode of 16 tokens for 8 rows, and one GRPO step (8 rollouts x 2 prompts, LoRA r 4 on every
 * projection, PPO loss) on `model`. bytes = 0: these rows have no single memory roofline.
 */
/** One GRPO step with LoRA on every projection of `model`, returning its metrics (a smoke test). */
export async function rlSmokeStep(model: LlamaModel): Promise<Record<string, number>> {
  const V = model.config.vocabSize;
  const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
  const optimizer = new AdamW({ lr: 1e-2 });
  try {
    const report = await rlStep({ learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) }, [[1, 5 % V, 9 % V], [1, 7 % V]], 0, {
      groupSize: 4,
      maxNewTokens: 4,
      temperature: 1,
      topP: 0.95,
      advantage: 'grpo',
      trainer: { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.01 } },
    });
    return report.metrics;
  } finally {
    optimizer.dispose();
    lora.dispose();
  }
}

export async function benchWholeSteps(model: LlamaModel, reps: number): Promise<KernelBenchRow[]> {
  const V = model.config.vocabSize;
  const prompts = Array.from({ length: 8 }, (_, b) => Array.from({ length: 12 }, (_, t) => (3 + 7 * t + 11 * b) % V));
  const decode = () => generate(model, prompts, { maxNewTokens: 16, temperature: 0.7, topP: 0.9, seed: 1 });
  const rl = async () => {
    const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
    const optimizer = new AdamW({ lr: 1e-3 });
    try {
      await rlStep({ learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) }, prompts.slice(0, 2), 0, {
        groupSize: 8,
        maxNewTokens: 8,
        temperature: 1,
        advantage: 'grpo',
        trainer: { policyLoss: 'ppo' },
      });
    } finally {
      optimizer.dispose();
      lora.dispose();
    }
  };
  const rows: KernelBenchRow[] = [];
  for (const [name, shape, fn] of [
    ['decode 16 tokens (T 0.7, top-p 0.9)', 'batch 8', decode],
    ['GRPO step (rollout + learn)', '2 prompts x G 8', rl],
  ] as const) {
    try {
      setCustomKernels(false);
      const stockMs = await timeAsync(reps, fn);
      setCustomKernels(true);
      const oursMs = await timeAsync(reps, fn);
      rows.push({ name, shape, oursMs, stockMs, bytes: 0 });
    } finally {
      setCustomKernels(true);
    }
  }
  return rows;
}
