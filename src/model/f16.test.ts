import { pathToFileURL } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { parseModelConfig } from '../contract/modelConfig';
import { DenseWeight, type Linear } from './linear';
import { disposeLlama, forward, linearLayers, loadLlama } from './llama';
import { loadModel } from './load';
import { F16Weight, packF16x2, weightQuantizer } from './quant';
import { mulberry32 } from './random';
import { parseSafetensors, writeSafetensors, type TensorToWrite } from './safetensors';
import { qwen2Weights, writeQwen2Fixture } from '../../dev/test/testdata/qwen2Fixture';
import { projectionBytes, weightSpec } from '../contract/weightFormat';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');

// Independent references, in float64 arithmetic (not the bit-twiddling encoder under test).
/** The nearest IEEE half to x, ties to even (|x| < 65520). */
function roundHalfRef(x: number): number {
  if (x === 0) return x;
  const a = Math.abs(x);
  let e = Math.floor(Math.log2(a));
  while (2 ** e > a) e--;
  while (2 ** (e + 1) <= a) e++;
  const ulp = 2 ** (Math.max(e, -14) - 10);
  const q = a / ulp; // exact: a has at most 24 significant bits
  let r = Math.floor(q);
  if (q - r > 0.5 || (q - r === 0.5 && r % 2 === 1)) r++;
  return Math.sign(x) * r * ulp;
}
/** The value of half bits h (finite only). */
function halfValueRef(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const f = h & 0x3ff;
  return sign * (e === 0 ? f * 2 ** -24 : (1 + f / 1024) * 2 ** (e - 15));
}
const halves = (packed: Int32Array) => Array.from(packed).flatMap((w) => [w & 0xffff, (w >>> 16) & 0xffff]);
const bitsOf = (x: Float32Array) => Array.from(new Uint32Array(x.buffer, x.byteOffset, x.length));
const packedOf = (l: Linear) => (l.weight as F16Weight).blocks[0].packed.dataSync() as Int32Array;

describe('f16 weights (hand-worked halves)', () => {
  it('rounds to the nearest half, ties to even, and packs the first half of a word in the low 16 bits', () => {
    const row = [
      1,
      65504,
      2 ** -24,
      -0,
      1 / 3,
      1 + 2 ** -11,
      1 + 3 * 2 ** -11,
      2 ** -25,
      3 * 2 ** -25,
      -(2 ** -14),
      1023 * 2 ** -24,
      -2,
    ];
    const packed = packF16x2(Float32Array.from(row), [1, row.length]);
    expect(packed.length).toBe(6);
    // 1 + 2^-11 is half-way between 0x3C00 and 0x3C01: the even one; 1 + 3 * 2^-11 between
    // 0x3C01 and 0x3C02: 0x3C02. 2^-25 is half the smallest subnormal: to 0; 3 * 2^-25 to 0x0002.
    expect(halves(packed)).toEqual([
      0x3c00, 0x7bff, 0x0001, 0x8000, 0x3555, 0x3c00, 0x3c02, 0x0000, 0x0002, 0x8400, 0x03ff, 0xc000,
    ]);
    // Word 0 = 0x7BFF3C00 as a signed int32.
    expect(packed[0]).toBe(0x7bff3c00);
    // An odd row length pads the last word's high half with 0.
    expect(Array.from(packF16x2(Float32Array.from([1, 2, 3]), [1, 3]))).toEqual([0x40003c00, 0x4200]);
  });

  it('a weight beyond +-65504 is one error naming the tensor and the element', () => {
    expect(() => packF16x2(Float32Array.from([0, 65504, -65504]), [1, 3], 't')).not.toThrow();
    const hook = weightQuantizer('f16', 'fixture')!;
    expect(() => hook('model.layers.0.self_attn.q_proj', Float32Array.from([0, 1, 2, 65505]), [2, 2])).toThrow(
      /fixture: model\.layers\.0\.self_attn\.q_proj\.weight: weight 65505 at \[1, 1\] is beyond the f16 range \+-65504/,
    );
    expect(() => packF16x2(Float32Array.from([-70000]), [1, 1], 'w')).toThrow(/w: weight -70000 at \[0, 0\]/);
    expect(() => packF16x2(Float32Array.from([NaN]), [1, 1], 'w')).toThrow(/w: weight NaN/);
  });

  it('matches the float64 reference rounding over many magnitudes', () => {
    const r = mulberry32(11);
    const w = Float32Array.from({ length: 4000 }, () => (2 * r() - 1) * 2 ** Math.floor(r() * 40 - 26));
    const got = halves(packF16x2(w, [40, 100])).map(halfValueRef);
    for (let i = 0; i < w.length; i++) expect(got[i]).toBe(roundHalfRef(w[i]));
  });

  it('decodes every finite half exactly with stock ops (cpu), and re-rounds each to its own bits', () => {
    const bits = Array.from({ length: 0x10000 }, (_, h) => h).filter((h) => ((h >> 10) & 0x1f) !== 0x1f);
    expect(bits.length).toBe(63488);
    const values = Float32Array.from(bits, halfValueRef);
    const w = new F16Weight(values, [248, 256], 'all halves');
    // So an F16 source (decoded to float32 on load, exactly) keeps its bits: no double rounding.
    expect(halves(w.blocks[0].packed.dataSync() as Int32Array)).toEqual(bits);
    const dense = tf.tidy(() => w.toDense().dataSync() as Float32Array);
    expect(bitsOf(dense)).toEqual(bitsOf(values)); // -0 included
    expect(w.bytes).toBe(248 * 128 * 4 + 248 * 4);
    w.dispose();
  });

  it('names and sizes the format by hand', () => {
    expect(weightSpec('f16')).toEqual({ kind: 'f16' });
    // [32, 32]: 16 words per row + a unit scale per row; [3, 5]: 3 words per row.
    expect(projectionBytes('f16', 32, 32)).toBe(32 * 16 * 4 + 32 * 4);
    expect(projectionBytes('f16', 3, 5)).toBe(3 * 3 * 4 + 3 * 4);
  });
});

describe('f16 weights on the tfjs wasm backend (the CPU fallback in the browser)', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
    await tf.ready();
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('decode every finite half exactly with stock ops', () => {
    expect(tf.getBackend()).toBe('wasm');
    const bits = Array.from({ length: 0x10000 }, (_, h) => h).filter((h) => ((h >> 10) & 0x1f) !== 0x1f);
    const values = Float32Array.from(bits, halfValueRef);
    const w = new F16Weight(values, [248, 256]);
    const dense = tf.tidy(() => w.toDense().dataSync() as Float32Array);
    w.dispose();
    expect(bitsOf(dense)).toEqual(bitsOf(values));
  });
});

describe('models loaded with weights f16', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'f16-'));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('tiny-llama-f32: logits equal the f32 model on float64-rounded weights within 1e-5 (cpu)', () => {
    const config = parseModelConfig(readFileSync(new URL('tiny-llama-f32/config.json', FIXTURES), 'utf8'));
    const st = parseSafetensors(new Uint8Array(readFileSync(new URL('tiny-llama-f32/model.safetensors', FIXTURES))));
    const golden = JSON.parse(readFileSync(new URL('tiny-llama-f32/golden.json', FIXTURES), 'utf8')) as {
      input_ids: number[];
    };
    const before = tf.memory().numTensors;
    const half = loadLlama(config, st, { quantize: weightQuantizer('f16', 'tiny') });
    const ref = loadLlama(config, st, {
      quantize: (_n, w, shape) => new DenseWeight(tf.tensor2d(Float32Array.from(w, roundHalfRef), shape)),
    });
    const plain = loadLlama(config, st);
    try {
      expect(linearLayers(half).every((l) => l.weight.kind === 'f16')).toBe(true);
      const [a, b, c] = [half, ref, plain].map((m) =>
        tf.tidy(() => forward(m, [golden.input_ids]).dataSync() as Float32Array),
      );
      let diff = 0;
      let moved = 0;
      for (let i = 0; i < a.length; i++) {
        diff = Math.max(diff, Math.abs(a[i] - b[i]));
        moved = Math.max(moved, Math.abs(a[i] - c[i]));
      }
      expect(diff).toBeLessThan(1e-5);
      expect(moved).toBeGreaterThan(1e-5); // really rounded to halves
    } finally {
      [half, ref, plain].forEach(disposeLlama);
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('an F16 safetensors source keeps its bits (subnormals and -0 too); a BF16 hub repository is rounded', async () => {
    // The tiny fixture's tensors written as F16 from chosen raw bits: the projections carry random
    // halves of every exponent below 2 (subnormals included) and some -0.
    const config = parseModelConfig(readFileSync(new URL('tiny-llama-f32/config.json', FIXTURES), 'utf8'));
    const src = parseSafetensors(new Uint8Array(readFileSync(new URL('tiny-llama-f32/model.safetensors', FIXTURES))));
    const r = mulberry32(5);
    const raw = new Map<string, Uint16Array>();
    const out = new Map<string, TensorToWrite>();
    for (const name of src.names()) {
      const shape = src.info(name).shape;
      const proj = /_proj\.weight$/.test(name);
      const data = proj
        ? Uint16Array.from({ length: shape.reduce((x, y) => x * y, 1) }, (_, i) =>
            i % 97 === 0 ? 0x8000 : (r() < 0.5 ? 0x8000 : 0) | (Math.floor(r() * 16) << 10) | Math.floor(r() * 1024),
          )
        : Uint16Array.from(src.getFloat32(name), (v) => halfBitsOfRounded(v));
      raw.set(name, data);
      out.set(name, { dtype: 'F16', shape, data });
    }
    const st = parseSafetensors(writeSafetensors(out));
    const m = loadLlama(config, st, { quantize: weightQuantizer('f16', 'f16 file') });
    try {
      linearLayers(m).forEach((l) => {
        expect(halves(packedOf(l)).slice(0, l.inFeatures * l.outFeatures)).toEqual(
          Array.from(raw.get(`${l.name}.weight`)!),
        );
      });
    } finally {
      disposeLlama(m);
    }

    // The generated Qwen2 hub repository (BF16, q/k/v biases, untied head): every projection and
    // the head rounded from its bfloat16 values.
    writeQwen2Fixture(join(tmp, 'qwen'));
    const q = await loadModel(folderSource(join(tmp, 'qwen')), { quantize: weightQuantizer('f16', 'qwen') });
    try {
      const want = qwen2Weights();
      const lin = [...linearLayers(q), q.lmHead];
      expect(lin.every((l) => l.weight.kind === 'f16')).toBe(true);
      lin.forEach((l) => {
        const got = halves(packedOf(l)).map(halfValueRef);
        const w = want.get(`${l.name}.weight`)!.data;
        for (let j = 0; j < w.length; j++) expect(got[j]).toBe(roundHalfRef(w[j]));
      });
    } finally {
      disposeLlama(q);
    }
  });
});

/** Half bits of a value already representable as a half (via the float64 reference). */
function halfBitsOfRounded(v: number): number {
  const x = roundHalfRef(v);
  const s = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  if (a < 2 ** -14) return s | (a / 2 ** -24);
  const e = Math.floor(Math.log2(a));
  return s | ((e + 15) << 10) | ((a / 2 ** e - 1) * 1024);
}
