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
