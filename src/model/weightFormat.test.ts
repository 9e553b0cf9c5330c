import * as tf from '@tensorflow/tfjs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { disposeLlama, forward } from './llama';
import { loadModel } from './load';
import { weightQuantizer } from './quant';
import { projectionBytes, weightSpec } from '../contract/weightFormat';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const SANDBOX = resolve(HERE, '../../public/models/defender');

describe('weight formats', () => {
  it('reads the format names', () => {
    expect(weightSpec('f32')).toEqual({ kind: 'f32' });
    expect(weightSpec('int8')).toEqual({ kind: 'int8' });
    expect(weightSpec('int4-g64')).toEqual({ kind: 'int4', groupSize: 64 });
    expect(weightSpec('f16')).toEqual({ kind: 'f16' });
    expect(() => weightSpec('bf16')).toThrow(/unknown weight format "bf16" \(formats: f32, f16, int8, int4-g32/);
  });

  it('sizes a projection by hand: [32, 32] is 4096 B in f32, 1152 B in int8, 640 B in int4-g32', () => {
    expect(projectionBytes('f32', 32, 32)).toBe(32 * 32 * 4);
    // int8: 8 words of 4 bytes per row + one float32 scale per row.
    expect(projectionBytes('int8', 32, 32)).toBe(32 * 32 + 32 * 4);
    // int4-g32: 4 words per row + one scale per row (one group of 32).
    expect(projectionBytes('int4-g32', 32, 32)).toBe(32 * 16 + 32 * 4);
    // [64, 128] int4-g64: 16 words per row, 2 groups.
    expect(projectionBytes('int4-g64', 64, 128)).toBe(64 * 64 + 64 * 2 * 4);
  });

  it('loads every projection in the format asked for, and the model still computes', async () => {
    const f32 = await loadModel(folderSource(FIXTURE));
    const q4 = await loadModel(folderSource(FIXTURE), { quantize: weightQuantizer('int4-g32', 'fixture') });
    const q8 = await loadModel(folderSource(FIXTURE), { quantize: weightQuantizer('int8', 'fixture') });
    try {
      expect(f32.layers[0].q.weight.kind).toBe('f32');
      for (const l of q4.layers)
        for (const p of [l.q, l.k, l.v, l.o, l.gate, l.up, l.down]) expect(p.weight.kind).toBe('int4');
      expect(q8.layers[1].down.weight.kind).toBe('int8');
      expect(q4.layers[0].q.weight.bytes).toBe(640);
      const ids = [[1, 5, 9, 17, 33, 2]];
      const [a, b, c] = [f32, q4, q8].map((m) => tf.tidy(() => forward(m, ids).arraySync() as number[][][]));
      const maxDiff = (x: number[][][], y: number[][][]) =>
        Math.max(...x[0].flatMap((row, i) => row.map((v, j) => Math.abs(v - y[0][i][j]))));
      // Quantised, not replaced: int8 is closer to the float logits than int4 (quant.test.ts has
      // the sharp checks of each path; this random fixture's logits span about +-10).
      expect(maxDiff(a, b)).toBeGreaterThan(0);
      expect(maxDiff(a, c)).toBeLessThan(maxDiff(a, b));
    } finally {
      [f32, q4, q8].forEach(disposeLlama);
    }
  });

  it('a group that does not divide a projection fails naming the model, projection and format', async () => {
    // The sandbox defender's hidden size is 96: groups of 64 do not divide it.
    await expect(
      loadModel(folderSource(SANDBOX), { quantize: weightQuantizer('int4-g64', 'defender') }),
    ).rejects.toThrow(
      /defender: weight format int4-g64 needs input sizes divisible by 64, but model\.layers\.0\.self_attn\.q_proj has 96 inputs/,
    );
  });
});
