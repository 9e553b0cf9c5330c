// Where one cached decode step spends its time: tf.profile of a single-token forward after a
// prefill, aggregated by kernel name (GPU time where the backend reports it).
import * as tf from '@tensorflow/tfjs';
import { createKVCache, disposeKVCache, forward, type LlamaModel } from '../../src/model/llama';

export interface DecodeProfile {
  wallMs: number;
  kernels: { name: string; count: number; ms: number }[];
}

export async function profileDecode(model: LlamaModel, ids: number[], batch = 1): Promise<DecodeProfile> {
  const cache = createKVCache(model, batch, ids.length + 2);
  try {
    const rows = Array.from({ length: batch }, () => ids);
    forward(model, rows, { cache, lastOnly: true }).dispose();
    const t0 = performance.now();
    const p = await tf.profile(async () => {
      const out = forward(
        model,
        rows.map((r) => [r[0]]),
        { cache },
      );
      await out.data();
      return out;
    });
    const wallMs = performance.now() - t0;
    (p.result as unknown as tf.Tensor).dispose();
    const agg = new Map<string, { name: string; count: number; ms: number }>();
    for (const k of p.kernels) {
      const a = agg.get(k.name) ?? { name: k.name, count: 0, ms: 0 };
      a.count++;
      a.ms += typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
      agg.set(k.name, a);
    }
    return { wallMs, kernels: [...agg.values()].sort((a, b) => b.ms - a.ms) };
  } finally {
    disposeKVCache(cache);
  }
}
