import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { DenseWeight } from './linear';
import { disposeLlama, forward, linearLayers, loadLlama } from './llama';
import {
  Int4Weight,
  Int8Weight,
  dequantizeInt8,
  int4Quantizer,
  int8Quantizer,
  packInt4x8,
  packInt8x4,
  quantizeInt4,
  quantizeInt8,
} from './quant';
import { mulberry32 } from './random';
import { parseSafetensors } from './safetensors';
import { setEngineOptions } from '../engine/index';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');

describe('int8 quantisation (hand-worked)', () => {
  it('quantises one row per channel and packs four per word, low byte first', () => {
    const m = quantizeInt8(Float32Array.from([1, -0.5, 0.25, 0, 0.3]), [1, 5]);
    expect(m.scales[0]).toBe(Math.fround(1 / 127));
    // 1 -> 127; -0.5*127 = -63.5 -> -64 (half away from zero); 31.75 -> 32; 0; 38.1 -> 38
    expect(Array.from(m.q)).toEqual([127, -64, 32, 0, 38]);
    // word 0 = 127 | 0xc0 << 8 | 32 << 16 | 0 << 24 = 2146431; word 1 = 38 (zero padded)
    expect(Array.from(packInt8x4(m.q, 1, 5))).toEqual([2146431, 38]);
    const w = new Int8Weight(m);
    expect(Array.from(tf.tidy(() => w.unpack().dataSync()))).toEqual([127, -64, 32, 0, 38]);
    expect(w.bytes).toBe(2 * 4 + 4);
    w.dispose();
  });

  it('unpacks every int8 value exactly, including the sign byte', () => {
    const q = Int8Array.from({ length: 256 }, (_, i) => i - 128);
    const m = { out: 4, in: 64, groupSize: 64, q, scales: new Float32Array(4).fill(1) };
    const w = new Int8Weight(m);
    expect(Array.from(tf.tidy(() => w.unpack().dataSync()))).toEqual(Array.from(q));
    w.dispose();
  });

  it('per-group scales, error within half a step, all-zero groups exact', () => {
    const r = mulberry32(3);
    const data = Float32Array.from({ length: 3 * 16 }, (_, i) =>
      i < 4 ? 0 : (2 * r() - 1) * (1 + (i % 16 >= 8 ? 9 : 0)),
    );
    const m = quantizeInt8(data, [3, 16], { groupSize: 8 });
    expect(m.scales.length).toBe(6);
    expect(m.scales[1]).toBeGreaterThan(m.scales[0] * 3); // the second half of each row is ~10x larger
    const deq = dequantizeInt8(m);
    for (let i = 0; i < data.length; i++) {
      const s = m.scales[Math.floor(i / 8)];
      expect(Math.abs(deq[i] - data[i])).toBeLessThanOrEqual(s / 2 + 1e-7);
    }
    expect(Array.from(deq.slice(0, 4))).toEqual([0, 0, 0, 0]);
    const w = new Int8Weight(m);
    const dense = tf.tidy(() => w.toDense().dataSync());
    for (let i = 0; i < deq.length; i++) expect(dense[i]).toBeCloseTo(deq[i], 6);
    w.dispose();
    expect(() => quantizeInt8(data, [3, 16], { groupSize: 5 })).toThrow(
      /groupSize 5 must be a positive divisor of the input size 16/,
    );
  });
});

describe.each(['tiny-llama', 'tiny-llama-f32'])('int8 model on %s', (dir) => {
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))));
  const golden = JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')) as {
    input_ids: number[];
    logits: number[][];
  };

  // Tolerances, stated from measurement (tfjs CPU): each weight moves by up to scale/2 =
  // max|w_group|/254, and this model (hidden 32, random weights) averages little of that away.
  // Measured max |logit - golden|: tiny-llama 0.397 per channel / 0.292 group 8; tiny-llama-f32
  // 0.292 / 0.210 (logits span about +-10); mean |error| 0.04-0.05; argmax unchanged at all 12
  // positions. Bounds: max 0.5 / 0.35, mean 0.07 / 0.06, every argmax equal.
  it.each([
    { label: 'per channel', opts: {}, tol: 0.5, meanTol: 0.07 },
    { label: 'group 8', opts: { groupSize: 8 }, tol: 0.35, meanTol: 0.06 },
  ])('$label: logits within $tol of the float64 golden ones, same argmax', ({ label, opts, tol, meanTol }) => {
    const before = tf.memory().numTensors;
    const model = loadLlama(config, st, { quantize: int8Quantizer(opts) });
    expect(linearLayers(model).every((l) => l.weight.kind === 'int8')).toBe(true);
    const logits = forward(model, [golden.input_ids]);
    const got = logits.dataSync();
    const want = golden.logits.flat();
    let err = 0;
    let sum = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i] - want[i]));
      sum += Math.abs(got[i] - want[i]);
    }
    console.log(
      `${dir} int8 ${label}: max |logit - golden| = ${err.toFixed(4)}, mean ${(sum / want.length).toFixed(4)}`,
    );
    expect(err).toBeLessThan(tol);
    expect(sum / want.length).toBeLessThan(meanTol);
    expect(err).toBeGreaterThan(0); // really quantised
    const V = config.vocabSize;
    for (let p = 0; p < golden.input_ids.length; p++) {
      const row = golden.logits[p];
      const mine = Array.from(got.slice(p * V, (p + 1) * V));
      expect(mine.indexOf(Math.max(...mine))).toBe(row.indexOf(Math.max(...row)));
    }
    logits.dispose();
    disposeLlama(model);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('the int8 path computes exactly what float32 weights q * scale compute', () => {
    const opts = { groupSize: 8 };
    const q = loadLlama(config, st, { quantize: int8Quantizer(opts) });
    const ref = loadLlama(config, st, {
      quantize: (_n, w, shape) => new DenseWeight(tf.tensor2d(dequantizeInt8(quantizeInt8(w, shape, opts)), shape)),
    });
    const a = forward(q, [golden.input_ids]);
    const b = forward(ref, [golden.input_ids]);
    expect(tf.max(tf.abs(a.sub(b))).dataSync()[0]).toBeLessThan(1e-5);
    tf.dispose([a, b]);
    disposeLlama(q);
    disposeLlama(ref);
  });
});

describe('int4 weights', () => {
  it('quantises a group of 8 by max|w| / 7 and packs q + 8 nibbles, low nibble first', () => {
    // w = [0.7, -0.7, 0.36, 0, 0.1, -0.06, 0.7, -0.3]: scale 0.1; q = [7, -7, 4, 0, 1, -1, 7, -3];
    // nibbles q + 8 = [15, 1, 12, 8, 9, 7, 15, 5].
    const m = quantizeInt4(Float32Array.from([0.7, -0.7, 0.36, 0, 0.1, -0.06, 0.7, -0.3]), [1, 8], 8);
    expect(m.scales[0]).toBeCloseTo(0.1, 7);
    expect(Array.from(m.q)).toEqual([7, -7, 4, 0, 1, -1, 7, -3]);
    // word = 0x5F79 8C1F read nibble by nibble from the top: 5, F, 7, 9, 8, C, 1, F.
    expect(Array.from(packInt4x8(m.q, 1, 8))).toEqual([0x5f798c1f]);
  });

  it('unpacks every nibble exactly, including the top one that carries the sign bit', () => {
    const q = Int8Array.from({ length: 32 }, (_, i) => (i % 16) - 8);
    const w = new Int4Weight({ out: 1, in: 32, groupSize: 32, q, scales: Float32Array.from([1]) });
    expect(Array.from(tf.tidy(() => w.toDense().dataSync()))).toEqual(Array.from(q));
    w.dispose();
  });

  it('rejects group sizes that do not fit the layout', () => {
    expect(() => quantizeInt4(new Float32Array(40), [1, 40], 32)).toThrow(/groupSize 32/);
    expect(() => quantizeInt4(new Float32Array(12), [1, 12], 12)).toThrow(/multiple of 8/);
  });
});

describe.each(['tiny-llama', 'tiny-llama-f32'])('int4 model on %s', (dir) => {
  const config = parseModelConfig(readFileSync(new URL(`${dir}/config.json`, FIXTURES), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES))));
  const golden = JSON.parse(readFileSync(new URL(`${dir}/golden.json`, FIXTURES), 'utf8')) as {
    input_ids: number[];
    logits: number[][];
  };

  // int4 moves each weight by up to max|w_group| / 14, 18x int8's step, and a group of 32 is this
  // model's whole hidden size, so one outlier sets the step for its row. Measured on tfjs CPU
  // (max / mean |logit - golden|): tiny-llama 4.43 / 0.84, tiny-llama-f32 7.74 / 0.87, logits
  // spanning about +-10. Bounds: max 9, mean 1.0. The exactness test below is the sharp check.
  it('group 32: logits within the stated bounds of the golden ones', () => {
    const model = loadLlama(config, st, { quantize: int4Quantizer(32) });
    expect(linearLayers(model).every((l) => l.weight.kind === 'int4')).toBe(true);
    const got = forward(model, [golden.input_ids]).dataSync();
    const want = golden.logits.flat();
    let err = 0;
    let sum = 0;
    for (let i = 0; i < want.length; i++) {
      err = Math.max(err, Math.abs(got[i] - want[i]));
      sum += Math.abs(got[i] - want[i]);
    }
    console.log(`${dir} int4 g32: max |logit - golden| = ${err.toFixed(4)}, mean ${(sum / want.length).toFixed(4)}`);
    expect(err).toBeLessThan(9);
    expect(sum / want.length).toBeLessThan(1.0);
    disposeLlama(model);
  });

  it('the int4 path computes exactly what float32 weights q * scale compute', () => {
    const deq = (w: Float32Array, shape: [number, number]) => {
      const m = quantizeInt4(w, shape, 32);
      return Float32Array.from(m.q, (q, i) => q * m.scales[Math.floor(i / 32)]);
    };
    const q = loadLlama(config, st, { quantize: int4Quantizer(32) });
    const ref = loadLlama(config, st, {
      quantize: (_n, w, shape) => new DenseWeight(tf.tensor2d(deq(w, shape), shape)),
    });
    const a = forward(q, [golden.input_ids]);
    const b = forward(ref, [golden.input_ids]);
    expect(tf.max(tf.abs(a.sub(b))).dataSync()[0]).toBeLessThan(1e-5);
    tf.dispose([a, b]);
    disposeLlama(q);
    disposeLlama(ref);
  });
});

describe('weights over the storage-binding limit', () => {
  it('are held in row blocks that each fit, with the same product, dense form and size', () => {
    const [out, inp] = [75, 64];
    const r = mulberry32(21);
    const w = Float32Array.from({ length: out * inp }, () => 2 * r() - 1);
    const x = tf.tensor2d(
      Float32Array.from({ length: 3 * inp }, () => 2 * r() - 1),
      [3, inp],
    );
    for (const make of [() => Int8Weight.fromFloat32(w, [out, inp]), () => Int4Weight.fromFloat32(w, [out, inp], 32)]) {
      const whole = make();
      // int8: 16 words a row (64 B); int4: 8 words (32 B). 20 int8 rows or 40 int4 rows per binding.
      setEngineOptions({ bindingLimit: 20 * 64 });
      const split = make();
      setEngineOptions({ bindingLimit: null });
      expect(whole.blocks).toHaveLength(1);
      const rows = split.blocks.map((b) => b.outFeatures);
      expect(rows.reduce((a, b) => a + b, 0)).toBe(out);
      for (const b of split.blocks) expect(b.packed.size * 4).toBeLessThanOrEqual(20 * 64);
      expect(split.blocks.length).toBe(whole.kind === 'int8' ? 4 : 2);
      expect(split.bytes).toBe(whole.bytes);
      const [d1, d2, y1, y2] = tf.tidy(() =>
        [whole.toDense(), split.toDense(), whole.matmul(x), split.matmul(x)].map((t) => t.dataSync()),
      );
      expect(Array.from(d2)).toEqual(Array.from(d1));
      expect(Array.from(y2)).toEqual(Array.from(y1));
      // The gradient to x sums over the blocks' output columns.
      const dy = tf.tensor2d(
        Float32Array.from({ length: 3 * out }, () => 2 * r() - 1),
        [3, out],
      );
      const g = (m: typeof whole) =>
        tf
          .grad((v: tf.Tensor) => tf.sum(tf.mul(m.matmul(v as tf.Tensor2D), dy)))(x)
          .dataSync();
      const [g1, g2] = [g(whole), g(split)];
      for (let i = 0; i < g1.length; i++) expect(g2[i]).toBeCloseTo(g1[i], 5);
      tf.dispose(dy);
      whole.dispose();
      split.dispose();
    }
    x.dispose();
  });
});
