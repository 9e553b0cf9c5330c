// Kernel benchmarks inside the worker: each custom kernel beside the same work done with stock
// tfjs ops, medians over repeated runs after a warm-up, GPU work awaited through a readback of
// the (small) outputs on both sides.
import * as tf from '@tensorflow/tfjs';
import {
  sampleTokens,
  sampleReference,
  tokenStats,
  tokenStatsReduceKey,
  tokenStatsStock,
  decodeAttention,
  decodeAttentionStock,
  subgroupsActive,
  setEngineOptions,
} from '../../src/engine/index';
import { seededLogits } from '../test/seededLogits';
import { median } from './throughput';
import { Int4Weight, Int8Weight } from '../../src/model/quant';
import { mulberry32 } from '../test/seededLogits';
import { generate } from '../../src/model/generate';
import type { LlamaModel } from '../../src/model/llama';
import { attachLora } from '../../src/model/lora';
import { rlStep } from '../../src/rl/loop';
import { AdamW } from '../../src/rl/optim';
import type { KernelBenchRow } from '../harness/harnessApi';

interface Timing {
  ms: number;
  /** Median summed GPU kernel time from timestamp queries, when the device has them. */
  gpuMs?: number;
}

function hasTimestamps(): boolean {
  return (
    tf.getBackend() === 'webgpu' &&
    (tf.backend() as unknown as { supportTimestampQuery?: boolean }).supportTimestampQuery === true
  );
}

/** Wall time of fn (GPU work awaited by reading the output back), median over reps after a warm-up. */
async function time(reps: number, fn: () => tf.Tensor | Promise<tf.Tensor>): Promise<number> {
  return (await timeBoth(reps, fn, false)).ms;
}

/** Wall time, plus GPU time from timestamp queries in a separate pass (timing every pass slows it). */
async function timeBoth(reps: number, fn: () => tf.Tensor | Promise<tf.Tensor>, gpuTiming = true): Promise<Timing> {
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
  if (!gpuTiming || !hasTimestamps()) return { ms: median(ms) };
  const gpu: number[] = [];
  for (let r = 0; r < reps; r++) {
    let out: tf.Tensor | null = null;
    const info = await tf.time(() => {
      const o = fn();
      if (o instanceof Promise) throw new Error('timeBoth: GPU timing needs a synchronous fn');
      out = o;
    });
    await (out as tf.Tensor | null)?.data();
    (out as tf.Tensor | null)?.dispose();
    if (typeof info.kernelMs === 'number') gpu.push(info.kernelMs);
  }
  return { ms: median(ms), gpuMs: gpu.length ? median(gpu) : undefined };
}

/** A kernel row with wall and (where available) GPU medians of both sides. */
async function pairRow(
  reps: number,
  name: string,
  shape: string,
  bytes: number,
  flops: number,
  ours: () => tf.Tensor,
  stock: () => tf.Tensor,
): Promise<KernelBenchRow> {
  const o = await timeBoth(reps, ours);
  const s = await timeBoth(reps, stock);
  return { name, shape, oursMs: o.ms, stockMs: s.ms, bytes, flops, oursGpuMs: o.gpuMs, stockGpuMs: s.gpuMs };
}

/**
 * The adapter's rough roofline, measured: streaming 64 MiB through a stock reduction (read
 * bandwidth) and a 1024^3 stock matmul (arithmetic). The CLI reports each kernel against them.
 */
async function benchRoofline(reps: number, rows: KernelBenchRow[]): Promise<void> {
  const n = 16 * 2 ** 20;
  const x = tf.randomUniform([n], -1, 1, 'float32', 1);
  // An elementwise op streams at close to the memory bandwidth (tfjs's 1-D sum does not); only
  // one element is read back, so the wall time is not a 64 MiB download.
  const s = await timeBoth(reps, () => tf.tidy(() => x.mul(2).slice(0, 1)));
  rows.push({
    name: 'roofline: stream (x * 2)',
    shape: `${n}`,
    oursMs: s.ms,
    stockMs: s.ms,
    bytes: 2 * n * 4,
    oursGpuMs: s.gpuMs,
    stockGpuMs: s.gpuMs,
    roofline: 'stream',
  });
  x.dispose();
  const m = 1024;
  const a = tf.randomUniform([m, m], -1, 1, 'float32', 2);
  const b = tf.randomUniform([m, m], -1, 1, 'float32', 3);
  const t = await timeBoth(reps, () => tf.matMul(a, b));
  rows.push({
    name: 'roofline: matmul',
    shape: `${m}^3`,
    oursMs: t.ms,
    stockMs: t.ms,
    bytes: 2 * m * m * 4,
    flops: 2 * m * m * m,
    oursGpuMs: t.gpuMs,
    stockGpuMs: t.gpuMs,
    roofline: 'matmul',
  });
  tf.dispose([a, b]);
}

/**
 * One decode step of SmolLM2-135M's attention (9 query / 3 kv heads of 64, batch 8) over a
 * 512-slot cache filled to 128 and to 511, against the stock path over the whole capacity.
 */
async function benchDecodeAttention(reps: number, rows: KernelBenchRow[]): Promise<void> {
  const [B, nH, nKv, C, D] = [8, 9, 3, 512, 64];
  const q = tf.randomUniform([B, nH, D], -1, 1, 'float32', 4) as tf.Tensor3D;
  const k = tf.randomUniform([B, nKv, C, D], -1, 1, 'float32', 5) as tf.Tensor4D;
  const v = tf.randomUniform([B, nKv, C, D], -1, 1, 'float32', 6) as tf.Tensor4D;
  const bias = tf.zeros([B, C]) as tf.Tensor2D;
  for (const len of [128, 511]) {
    rows.push(
      await pairRow(
        reps,
        'decode attention (GQA, KV cache)',
        `B${B} ${nH}/${nKv}x${D} len ${len}/${C}`,
        2 * B * nKv * len * D * 4,
        4 * B * nH * len * D,
        () => decodeAttention(q, k, v, bias, len),
        () => decodeAttentionStock(q, k, v, bias, len),
      ),
    );
  }
  tf.dispose([q, k, v, bias]);
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
    const stock = await timeBoth(reps, () => tf.matMul(x, dense, false, true));
    for (const q of weights) {
      const ours = await timeBoth(reps, () => q.matmul(x));
      rows.push({
        name: `matmul ${q.kind} ${n <= 8 ? '(GEMV)' : '(tiled)'} vs f32`,
        shape: `${n}x${inF} . ${out}x${inF}^T`,
        oursMs: ours.ms,
        stockMs: stock.ms,
        bytes: q.bytes,
        flops: 2 * n * out * inF,
        oursGpuMs: ours.gpuMs,
        stockGpuMs: stock.gpuMs,
      });
    }
    x.dispose();
  }
  weights.forEach((q) => q.dispose());
  dense.dispose();
}

/**
 * Token stats forward with each row reduction the adapter offers (subgroups where it has them,
 * the workgroup-memory tree always), each against the stock ops. The sandbox's 512-token
 * vocabulary is where the reduction, not the read, dominates.
 */
async function benchTokenStatsReductions(reps: number, rows: KernelBenchRow[]): Promise<void> {
  const variants = subgroupsActive() ? [true, false] : [false];
  for (const [r, v] of [
    [64, 512],
    [8, 49152],
    [8, 151936],
  ] as const) {
    const c = seededLogits(r, v, 9);
    const logits = tf.tensor2d(c.logits, [r, v]);
    const ids = tf.tensor1d(c.ids, 'int32');
    const refLogits = tf.tensor2d(seededLogits(r, v, 10).logits, [r, v]);
    const bytes = r * v * 4;
    try {
      for (const sg of variants) {
        setEngineOptions({ subgroups: sg });
        const how = `[${tokenStatsReduceKey(v)}]`;
        rows.push(
          await pairRow(
            reps,
            `token stats (logp + entropy) ${how}`,
            `${r}x${v}`,
            bytes,
            0,
            () => tokenStats(logits, ids),
            () => tokenStatsStock(logits, ids),
          ),
        );
        rows.push(
          await pairRow(
            reps,
            `token stats + reference logp (KL) ${how}`,
            `${r}x${v}`,
            2 * bytes,
            0,
            () => tokenStats(logits, ids, refLogits),
            () => tokenStatsStock(logits, ids, refLogits),
          ),
        );
      }
    } finally {
      setEngineOptions({ subgroups: true });
      tf.dispose([logits, ids, refLogits]);
    }
  }
}

export async function benchKernels(reps: number): Promise<KernelBenchRow[]> {
  const rows: KernelBenchRow[] = [];
  await benchRoofline(reps, rows);
  await benchQuantMatmul(reps, rows);
  await benchDecodeAttention(reps, rows);
  await benchTokenStatsReductions(reps, rows);
  for (const [r, v] of [
    [8, 49152],
    [8, 151936],
  ] as const) {
    const c = seededLogits(r, v, 9);
    const logits = tf.tensor2d(c.logits, [r, v]);
    const ids = tf.tensor1d(c.ids, 'int32');
    const bytes = r * v * 4;

    const dy = tf.ones([r, 2]);
    const grad = (f: typeof tokenStats) => () =>
      tf.grad((x: tf.Tensor) => tf.sum(tf.mul(f(x as tf.Tensor2D, ids), dy)))(logits);
    rows.push({
      name: 'token stats backward',
      shape: `${r}x${v}`,
      oursMs: await time(reps, grad(tokenStats)),
      stockMs: await time(reps, grad(tokenStatsStock)),
      bytes: 2 * bytes,
    });

    for (const [name, topK] of [
      ['sample top-k 50 / top-p 0.9', 50],
      ['sample top-p 0.9 (no top-k)', 0],
    ] as const) {
      const opts = { temperature: 0.7, topK, topP: 0.9, seed: 1, step: 0 };
      rows.push({
        name,
        shape: `${r}x${v}`,
        oursMs: await time(reps, () => sampleTokens(logits, opts)),
        // The obvious way: read the logits back and sample on the CPU.
        stockMs: await time(reps, async () => tf.tensor1d(sampleReference(await logits.data(), r, v, opts), 'int32')),
        bytes,
      });
    }
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

/** One GRPO step with LoRA on every projection of `model`, returning its metrics (a smoke test). */
export async function rlSmokeStep(model: LlamaModel): Promise<Record<string, number>> {
  const V = model.config.vocabSize;
  const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
  const optimizer = new AdamW({ lr: 1e-2 });
  let before = 0;
  for (const v of lora.variables()) for (const x of await v.data()) before += Math.abs(x);
  try {
    const report = await rlStep(
      { learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) },
      [
        [1, 5 % V, 9 % V],
        [1, 7 % V],
      ],
      0,
      {
        groupSize: 4,
        maxNewTokens: 4,
        temperature: 1,
        topP: 0.95,
        advantage: 'grpo',
        trainer: { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.01 } },
      },
    );
    // What the update did: the adapters' total |weight| before (A only: B starts at zero) and after.
    let after = 0;
    for (const v of lora.variables()) for (const x of await v.data()) after += Math.abs(x);
    // optim/planned: the moments are held on the GPU, so the planned optimiser took the update.
    return {
      ...report.metrics,
      'lora/abs_sum_before': before,
      'lora/abs_sum': after,
      'optim/step': optimizer.step,
      'optim/planned': optimizer.momentHolder ? 1 : 0,
    };
  } finally {
    optimizer.dispose();
    lora.dispose();
  }
}

/**
 * Whole steps with the custom kernels on (ours) and off (stock tfjs ops everywhere): a sampled
 * decode of 16 tokens for 8 rows, and one GRPO step (8 rollouts x 2 prompts, LoRA r 4 on every
 * projection, PPO loss) on `model`. bytes = 0: these rows have no single memory roofline.
 */
export async function benchWholeSteps(model: LlamaModel, reps: number): Promise<KernelBenchRow[]> {
  const V = model.config.vocabSize;
  const prompts = Array.from({ length: 8 }, (_, b) => Array.from({ length: 12 }, (_, t) => (3 + 7 * t + 11 * b) % V));
  const decode = () => generate(model, prompts, { maxNewTokens: 16, temperature: 0.7, topP: 0.9, seed: 1 });
  const rl = async () => {
    const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 1 });
    const optimizer = new AdamW({ lr: 1e-3 });
    try {
      await rlStep(
        { learner: { model, lora, optimizer }, rewardFn: ({ response }) => (response[0] % 2 === 0 ? 1 : 0) },
        prompts.slice(0, 2),
        0,
        {
          groupSize: 8,
          maxNewTokens: 8,
          temperature: 1,
          advantage: 'grpo',
          trainer: { policyLoss: 'ppo' },
        },
      );
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
      setEngineOptions({ customKernels: false });
      const stockMs = await timeAsync(reps, fn);
      setEngineOptions({ customKernels: true });
      const oursMs = await timeAsync(reps, fn);
      rows.push({ name, shape, oursMs, stockMs, bytes: 0 });
    } finally {
      setEngineOptions({ customKernels: true });
    }
  }
  return rows;
}
