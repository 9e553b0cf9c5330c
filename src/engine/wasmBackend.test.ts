import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededLogits } from '../../dev/test/seededLogits';
import { sampleTokens } from './kernels/sample/sample';
import { sampleReference } from './kernels/sample/sampleReference';
import { tokenStats } from './kernels/token-stats/tokenStats';
import { tokenStatsF64 } from './kernels/token-stats/tokenStatsReference';

// The wasm backend is the fast CPU fallback (and Node's bench backend): the stock-op paths must
// run on it too. (Its batched GatherV2 once read out of bounds here.)
describe('engine ops on the tfjs wasm backend', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
    await tf.ready();
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('token stats match the float64 reference', () => {
    expect(tf.getBackend()).toBe('wasm');
    const c = seededLogits(6, 777, 3);
    const ref = tokenStatsF64(c.logits, 6, 777, c.ids);
    const out = tokenStats(tf.tensor2d(c.logits, [6, 777]), tf.tensor1d(c.ids, 'int32')).arraySync();
    for (let r = 0; r < 6; r++) {
      expect(Math.abs(out[r][0] - ref.logp[r])).toBeLessThan(1e-4);
      expect(Math.abs(out[r][1] - ref.entropy[r])).toBeLessThan(1e-4);
    }
  });

  it('sampling is the CPU reference, draw for draw', async () => {
    const c = seededLogits(4, 300, 8, 2);
    const o = { temperature: 0.9, topK: 20, topP: 0.95, seed: 11, step: 2 };
    const ids = await sampleTokens(tf.tensor2d(c.logits, [4, 300]), o);
    expect(Array.from(ids.dataSync())).toEqual(Array.from(sampleReference(c.logits, 4, 300, o)));
  });
});
