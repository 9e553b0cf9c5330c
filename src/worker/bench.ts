// Kernel benchmarks inside the worker: each custom kernel beside the same work done with stock
// tfjs ops, medians over repeated runs after a warm-up, GPU work awaited through a readback of
// the (small) outputs on both sides.
import * as tf from '@tensorflow/tfjs';
import { sampleTokens } from '../engine/ops/sample';
import { sampleReference } from '../engine/ops/sampleReference';
import { tokenStats, tokenStatsStock } from '../engine/ops/tokenStats';
import { seededLogits } from '../engine/testing/seededLogits';
import { median } from '../model/throughput';
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

export async function benchKernels(reps: number): Promise<KernelBenchRow[]> {
  const rows: KernelBenchRow[] = [];
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
