// The tfjs forward on the Qwen3 and Gemma 3 fixtures against their float64 NumPy reference
// (dev/fixtures/families/generate.py, written from transformers' modeling files, not from this code).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { createKVCache, disposeKVCache, disposeLlama, forward, loadLlama } from './llama';
import { parseSafetensors, writeSafetensors } from './safetensors';
import { loadModel, type ModelFolder } from './load';
import { attachLora } from './lora';
import type { LoadOptions } from './llama';
import {
  dequantizeInt8,
  f16Quantizer,
  int4Quantizer,
  int8Quantizer,
  packF16x2,
  quantizeInt4,
  quantizeInt8,
  unpackF16x2,
} from './quant';
import { unplannableReason } from './planned/decode';
import { plannedMismatch, plannedLayer } from '../contract/blockDescription';
import { installWasmKernels } from '../engine/index';

// The wasm path's products run our GEMM, as in the app (src/engine/kernels/wasmGemm.ts).
installWasmKernels();
const FIXTURES = pathToFileURL(resolve('dev/fixtures/families') + '/');
const CASES = ['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied'];
/** The bound: float32 logits within 1e-4 of the float64 reference. */
const TOL = 1e-4;

interface Golden {
  input_ids: number[];
  logits: number[][];
  batch: { input_ids: number[][]; attention_mask: number[][]; logits: (number[] | null)[][] };
}

const read = (dir: string, f: string) => readFileSync(new URL(`${dir}/${f}`, FIXTURES));
function load(dir: string, groupProjections = false) {
  const config = parseModelConfig(read(dir, 'config.json').toString('utf8'), `${dir}/config.json`);
  const st = parseSafetensors(new Uint8Array(read(dir, 'model.safetensors')), `${dir}/model.safetensors`);
  const golden = JSON.parse(read(dir, 'golden.json').toString('utf8')) as Golden;
  return { config, st, golden, model: loadLlama(config, st, { groupProjections }) };
}
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

const fixtures = CASES.map((dir) => ({ dir, ...load(dir) }));
afterAll(() => fixtures.forEach((f) => disposeLlama(f.model)));

describe.each(fixtures)('$dir', ({ dir, model, golden, config, st }) => {
  const V = config.vocabSize;

  it('the fixture exercises what it is for', () => {
    expect(config.numHeads * config.headDim).not.toBe(config.hiddenSize);
    expect(config.qkNorm).toBe(true);
    if (config.family === 'gemma3') {
      const windows = config.layerWindows;
      expect(windows.some((w) => w === null)).toBe(true);
      expect(windows.some((w) => w !== null && w < golden.input_ids.length)).toBe(true);
    }
    expect(st.has('lm_head.weight')).toBe(!config.tieWordEmbeddings);
  });

  it(`matches the float64 reference logits within ${TOL} at every position`, () => {
    const logits = forward(model, [golden.input_ids]);
    const err = maxAbsDiff(logits.dataSync(), golden.logits.flat());
    console.log(`${dir}: max |logit - float64 reference| = ${err.toExponential(3)}`);
    expect(err).toBeLessThan(TOL);
    logits.dispose();
  });

  it('a left-padded batch matches the reference at every real position (windows count pads as HF does)', () => {
    const { input_ids, attention_mask, logits: want } = golden.batch;
    const logits = forward(model, input_ids, { attentionMask: attention_mask });
    const got = logits.arraySync() as number[][][];
    let err = 0;
    want.forEach((row, b) =>
      row.forEach((w, i) => {
        if (w) err = Math.max(err, maxAbsDiff(got[b][i], w));
      }),
    );
    expect(err).toBeLessThan(TOL);
    logits.dispose();
  });

  it('KV-cache prefill + one-token steps reproduce the reference', () => {
    const ids = golden.input_ids;
    const cache = createKVCache(model, 1, 16);
    const parts = [forward(model, [ids.slice(0, 3)], { cache })];
    for (let i = 3; i < ids.length; i++) parts.push(forward(model, [[ids[i]]], { cache }));
    const stitched = tf.concat(parts, 1);
    expect(stitched.shape).toEqual([1, ids.length, V]);
    expect(maxAbsDiff(stitched.dataSync(), golden.logits.flat())).toBeLessThan(TOL);
    tf.dispose([stitched, ...parts]);
    disposeKVCache(cache);
  });
});

describe('what each feature contributes (the reference would catch its removal)', () => {
  const gemma = fixtures.find((f) => f.dir === 'gemma3-tied')!;

  it('Gemma 3 without the sliding window, or with the global RoPE everywhere, is off by far more than the bound', () => {
    const { config, st, golden } = gemma;
    for (const changed of [
      { ...config, layerWindows: config.layerWindows.map(() => null) },
      { ...config, ropeLocalTheta: null },
      { ...config, queryPreAttnScalar: null },
    ]) {
      const m = loadLlama(changed, st);
      const logits = forward(m, [golden.input_ids]);
      expect(maxAbsDiff(logits.dataSync(), golden.logits.flat())).toBeGreaterThan(100 * TOL);
      logits.dispose();
      disposeLlama(m);
    }
  });

  it('Qwen3 without its q/k norms is off by far more than the bound', () => {
    const { config, golden } = fixtures.find((f) => f.dir === 'qwen3-tied')!;
    const st = fixtures.find((f) => f.dir === 'qwen3-tied')!.st;
    const m = loadLlama({ ...config, qkNorm: false }, st);
    const logits = forward(m, [golden.input_ids]);
    expect(maxAbsDiff(logits.dataSync(), golden.logits.flat())).toBeGreaterThan(100 * TOL);
    logits.dispose();
    disposeLlama(m);
  });

  it('a Gemma checkpoint missing a q_norm is refused by its name, leaking nothing', () => {
    const { config, st } = gemma;
    const tensors: Record<string, { dtype: 'F32'; shape: number[]; data: Float32Array }> = {};
    for (const n of st.names())
      if (n !== 'model.layers.2.self_attn.q_norm.weight')
        tensors[n] = { dtype: 'F32', shape: st.info(n).shape, data: st.getFloat32(n) };
    const broken = parseSafetensors(writeSafetensors(tensors), 'broken.safetensors');
    const before = tf.memory().numTensors;
    expect(() => loadLlama(config, broken)).toThrow(/missing tensor "model\.layers\.2\.self_attn\.q_norm\.weight"/);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('LoRA training through the new blocks (tfjs autodiff)', () => {
  it.each(['gemma3-tied', 'qwen3-bias'])(
    '%s: adapter gradients through q/k norms, windows and GeGLU match central finite differences',
    (dir) => {
      const { model, golden } = fixtures.find((f) => f.dir === dir)!;
      const ids = golden.input_ids;
      const nll = () =>
        tf.tidy(() => {
          const logp = tf.logSoftmax(forward(model, [ids.slice(0, -1)]).squeeze([0]) as tf.Tensor2D);
          const picked = tf.gather(
            logp.reshape([-1]),
            tf.tensor1d(
              ids.slice(1).map((t, i) => i * model.config.vocabSize + t),
              'int32',
            ),
          );
          return picked.mean().neg() as tf.Scalar;
        });
      const set = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'k', 'gate', 'down'], seed: 5 });
      try {
        set.adapters.forEach((a, i) => a.B.assign(tf.randomUniform(a.B.shape, -0.2, 0.2, 'float32', 17 + i)));
        const { value, grads } = tf.variableGrads(nll, set.variables());
        value.dispose();
        // q and k of layer 0 (a sliding layer in gemma3-tied), gate and down of the last layer
        const picks = [set.adapters[0].A, set.adapters[1].B, set.adapters.at(-2)!.A, set.adapters.at(-1)!.B];
        const eps = 1e-2;
        for (const v of picks) {
          const g = grads[v.name].dataSync();
          const order = Array.from(g.keys()).sort((i, j) => Math.abs(g[j]) - Math.abs(g[i]));
          for (const idx of [order[0], order[1], order[Math.floor(order.length / 2)]]) {
            const orig = v.dataSync().slice();
            const at = (delta: number) => {
              const w = orig.slice();
              w[idx] += delta;
              v.assign(tf.tensor(w, v.shape));
              return tf.tidy(() => nll().dataSync()[0]);
            };
            const fd = (at(eps) - at(-eps)) / (2 * eps);
            v.assign(tf.tensor(orig, v.shape));
            expect(Math.abs(fd - g[idx])).toBeLessThan(2e-3 + 0.01 * Math.abs(g[idx]));
          }
          expect(Math.max(...Array.from(g, Math.abs))).toBeGreaterThan(1e-3); // not vacuous
        }
        tf.dispose(Object.values(grads));
      } finally {
        set.dispose();
      }
    },
  );
});

describe('every weight format on the new families', () => {
  // The packed model (int8 / int4 / f16 kernels reading packed words) against the f32 model whose
  // projections hold the same values decoded by the format's own host decoder.
  const decoders: [
    string,
    NonNullable<LoadOptions['quantize']>,
    (w: Float32Array, s: [number, number]) => Float32Array,
  ][] = [
    ['int8', int8Quantizer(), (w, s) => dequantizeInt8(quantizeInt8(w, s))],
    [
      'int4 (groups of 8)',
      int4Quantizer(8),
      (w, s) => {
        const m = quantizeInt4(w, s, 8);
        return Float32Array.from(m.q, (q, i) => q * m.scales[Math.floor(i / 8)]);
      },
    ],
    ['f16', f16Quantizer('fixture'), (w, s) => unpackF16x2(packF16x2(w, s), s[0], s[1])],
  ];
  it.each(decoders)(
    '%s: Gemma 3 and Qwen3 logits equal the f32 forward on the decoded weights (1e-4)',
    (_, quantize, decode) => {
      for (const dir of ['gemma3-untied', 'qwen3-bias']) {
        const { config, st, golden } = fixtures.find((f) => f.dir === dir)!;
        const packed = loadLlama(config, st, { quantize });
        const decoded = loadLlama(config, st, {
          quantize: (_name, w, shape) => {
            w.set(decode(w, shape));
            return null;
          },
        });
        const a = forward(packed, [golden.input_ids]);
        const b = forward(decoded, [golden.input_ids]);
        expect(maxAbsDiff(a.dataSync(), b.dataSync())).toBeLessThan(TOL);
        // and the format did change the model (the comparison is not f32 against itself)
        expect(maxAbsDiff(b.dataSync(), golden.logits.flat())).toBeGreaterThan(TOL / 100);
        tf.dispose([a, b]);
        disposeLlama(packed);
        disposeLlama(decoded);
      }
    },
  );
});

describe('the planned WebGPU paths', () => {
  it('the learning step takes every family past the block check', () => {
    // what stops the plans here is the cpu backend's weight layout, not the block
    for (const f of fixtures) expect(unplannableReason(f.model, true)).not.toMatch(/do not run this block/);
  });

  it("the decode reads every family's layers into its shape, and refuses a block outside it", () => {
    for (const f of fixtures) {
      expect(plannedMismatch(f.model.description)).toBeNull();
      // past the block check, what stops the decode plan here is the cpu backend's weight layout
      expect(unplannableReason(f.model)).not.toMatch(/do not run this block/);
    }
    const gemma = fixtures.find((f) => f.dir === 'gemma3-tied')!.model.description;
    const l = plannedLayer(gemma.layers[0]);
    expect(typeof l === 'string' ? l : [l.pre1, l.post1, l.pre2, l.post2]).toEqual([
      'input_layernorm',
      'post_attention_layernorm',
      'pre_feedforward_layernorm',
      'post_feedforward_layernorm',
    ]);
    // a norm between the attention and the MLP with no residual add: no planned shape holds it
    const odd = { ...gemma, layers: [gemma.layers[0].filter((o, i) => !(o.op === 'add' && i < 4))] };
    expect(plannedMismatch(odd)).toMatch(/^gemma3: a block of norm:residual,attention,norm:branch,norm:residual/);
  });
});

describe('the folder loader', () => {
  it('loads a Gemma 3 folder (config.json + model.safetensors) to the same logits', async () => {
    const dir = resolve('dev/fixtures/families/gemma3-untied');
    const golden = fixtures.find((f) => f.dir === 'gemma3-untied')!.golden;
    const files = ['config.json', 'model.safetensors'];
    const folder: ModelFolder = {
      label: dir,
      has: async (name) => files.includes(name),
      getText: async (name) => readFileSync(resolve(dir, name), 'utf8'),
      getBytes: async (name) => new Uint8Array(readFileSync(resolve(dir, name))).buffer,
    };
    const model = await loadModel(folder);
    expect(model.config.family).toBe('gemma3');
    const logits = forward(model, [golden.input_ids]);
    expect(maxAbsDiff(logits.dataSync(), golden.logits.flat())).toBeLessThan(TOL);
    logits.dispose();
    disposeLlama(model);
  });
});

describe('on tfjs-wasm (W^T layout, q/k/v and gate/up grouped, taped norms and RoPE)', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it.each(CASES)('%s: logits within the bound of the float64 reference, and a LoRA gradient as on cpu', async (dir) => {
    const run = async (backend: string) => {
      await tf.setBackend(backend);
      // Grouped on wasm (the option, off by default), so its numbers stay checked for each family.
      const { model, golden, config } = load(dir, true);
      const logits = forward(model, [golden.input_ids]);
      const lora = attachLora(model, { r: 2, alpha: 4, targets: ['q', 'k', 'v', 'gate', 'up'], seed: 3 });
      lora.adapters.forEach((a, i) => a.B.assign(tf.randomNormal(a.B.shape, 0, 0.3, 'float32', 7 + i)));
      const { grads } = tf.variableGrads(
        () =>
          tf.sum(
            tf.mul(forward(model, [golden.input_ids]), tf.range(0, config.vocabSize).div(config.vocabSize)),
          ) as tf.Scalar,
        lora.variables(),
      );
      const out = {
        grouped: model.layers[0].q.weight.constructor.name,
        logits: logits.dataSync().slice(),
        grads: lora.variables().map((v) => grads[v.name].dataSync().slice()),
        golden,
      };
      tf.dispose([logits, ...Object.values(grads)]);
      lora.dispose();
      disposeLlama(model);
      return out;
    };
    const cpu = await run('cpu');
    const wasm = await run('wasm');
    expect(wasm.grouped).toBe('WeightColumns');
    expect(maxAbsDiff(wasm.logits, wasm.golden.logits.flat())).toBeLessThan(TOL);
    wasm.grads.forEach((g, i) => {
      const scale = Math.max(1e-3, ...Array.from(cpu.grads[i], Math.abs));
      expect(maxAbsDiff(g, cpu.grads[i])).toBeLessThan(1e-4 * scale);
    });
  });
});
