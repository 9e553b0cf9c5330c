import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../contract/modelConfig';
import { disposeLlama, forward, loadLlama, PROJ_NAMES, type LlamaModel } from './llama';
import { DenseWeight, matMul2d, TransposedWeight, WeightColumns, weightLayout, type WeightLayout } from './linear';
import { attachLora, type LoraSet } from './lora';
import { parseSafetensors } from './safetensors';
import { installWasmKernels, shareWasmIdentity } from '../engine/index';

// The wasm/cpu weight layout (W^T, issue 42) against the golden float64 logits and against the
// tfjs reference: the PyTorch layout on the cpu backend, where every product is stock tf.matMul
// with its stock gradient.

// As the lab and the CLI run wasm: an Identity that shares its input (engine/wasmIdentity.ts).
shareWasmIdentity();
installWasmKernels();

const DIR = pathToFileURL(resolve('dev/fixtures/tiny-llama-f32') + '/');
const config = parseModelConfig(readFileSync(new URL('config.json', DIR), 'utf8'), 'config.json');
const weights = new Uint8Array(readFileSync(new URL('model.safetensors', DIR)));
const golden = JSON.parse(readFileSync(new URL('golden.json', DIR), 'utf8')) as {
  input_ids: number[];
  logits: number[][];
  greedy_continuation: number[];
};

// groupProjections: the grouped wasm path (off by default, see LoadOptions) stays checked here.
const load = (layout?: WeightLayout) =>
  loadLlama(config, parseSafetensors(weights, 'model.safetensors'), { layout, groupProjections: true });

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

/** LoRA r4 on every projection with B drawn (B = 0 would make A's gradient zero), seeded. */
function lora(model: LlamaModel): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: [...PROJ_NAMES], seed: 5 });
  set.adapters.forEach((a, i) => a.B.assign(tf.randomNormal(a.B.shape, 0, 0.3, 'float32', 100 + i)));
  return set;
}

/** Next-token NLL over the golden ids, two rows (the second shifted), with the adapters' gradients. */
function lossAndGrads(model: LlamaModel, set: LoraSet): { loss: number; grads: Float32Array[] } {
  const ids = golden.input_ids;
  const rows = [ids, [...ids.slice(1), ids[0]]];
  const { value, grads } = tf.variableGrads(() => {
    const logits = forward(model, rows);
    const T = ids.length - 1;
    const lp = tf.logSoftmax(logits.slice([0, 0, 0], [2, T, config.vocabSize]));
    const targets = tf.oneHot(
      tf.tensor2d(
        rows.map((r) => r.slice(1)),
        [2, T],
        'int32',
      ),
      config.vocabSize,
    );
    return tf.neg(tf.mean(tf.sum(tf.mul(lp, targets), -1)));
  }, set.variables());
  const out = {
    loss: value.dataSync()[0],
    grads: set.variables().map((v) => grads[v.name].dataSync() as Float32Array),
  };
  tf.dispose([value, ...Object.values(grads)]);
  return out;
}

// The reference: PyTorch's layout on tfjs-cpu (stock matMul, stock gradients).
const reference = (() => {
  const model = load('outIn');
  expect(model.layers[0].q.weight).toBeInstanceOf(DenseWeight);
  const logits = forward(model, [golden.input_ids]);
  const set = lora(model);
  const out = { logits: logits.dataSync().slice(), ...lossAndGrads(model, set) };
  logits.dispose();
  set.dispose();
  disposeLlama(model);
  return out;
})();

describe.each(['cpu', 'wasm'])('weights held as W^T on %s', (backend) => {
  let model: LlamaModel;
  afterAll(async () => {
    disposeLlama(model);
    await tf.setBackend('cpu');
  });

  it('is the layout loadLlama picks there; logits match the golden ones and the reference', async () => {
    await tf.setBackend(backend);
    await tf.ready();
    expect(weightLayout()).toBe('inOut');
    model = load();
    const l0 = model.layers[0];
    expect(l0.o.weight).toBeInstanceOf(TransposedWeight);
    // On wasm q, k, v and gate, up are columns of one W^T per group (one product in the forward).
    if (backend === 'cpu') expect(l0.q.weight).toBeInstanceOf(TransposedWeight);
    else
      for (const [a, b] of [
        [l0.q, l0.k],
        [l0.k, l0.v],
        [l0.gate, l0.up],
      ]) {
        expect(a.weight).toBeInstanceOf(WeightColumns);
        expect((a.weight as WeightColumns).group).toBe((b.weight as WeightColumns).group);
      }
    expect(model.embed).toBeInstanceOf(TransposedWeight);
    expect(model.lmHead.weight).toBe(model.embed); // tied: one tensor
    const logits = forward(model, [golden.input_ids]);
    expect(maxAbsDiff(logits.dataSync(), golden.logits.flat())).toBeLessThan(1e-3);
    expect(maxAbsDiff(logits.dataSync(), reference.logits)).toBeLessThan(1e-5);
    logits.dispose();
  });

  it("LoRA gradients through every projection match the reference's", () => {
    const set = lora(model);
    const got = lossAndGrads(model, set);
    set.dispose();
    expect(Math.abs(got.loss - reference.loss)).toBeLessThan(1e-5);
    expect(got.grads).toHaveLength(reference.grads.length);
    let largest = 0;
    got.grads.forEach((g, i) => {
      const scale = Math.max(...Array.from(reference.grads[i], Math.abs));
      largest = Math.max(largest, scale);
      expect(maxAbsDiff(g, reference.grads[i])).toBeLessThan(1e-5 + 1e-4 * scale);
    });
    expect(largest).toBeGreaterThan(1e-3); // not vacuous
  });
});

describe('LoRA outside a tape on wasm', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('(A^T and s B^T kept between calls) gives the cpu logits, and follows a new B', async () => {
    const run = async (backend: string) => {
      await tf.setBackend(backend);
      const m = load();
      const set = lora(m);
      const first = forward(m, [golden.input_ids]);
      set.adapters.forEach((a, i) => a.B.assign(tf.randomNormal(a.B.shape, 0, 0.3, 'float32', 200 + i)));
      const second = forward(m, [golden.input_ids]);
      const out = [first.dataSync().slice(), second.dataSync().slice()];
      tf.dispose([first, second]);
      set.dispose();
      disposeLlama(m);
      return out;
    };
    const [cpu1, cpu2] = await run('cpu');
    const [wasm1, wasm2] = await run('wasm');
    expect(maxAbsDiff(cpu1, cpu2)).toBeGreaterThan(1e-2); // the new B changes the model
    expect(maxAbsDiff(wasm1, cpu1)).toBeLessThan(1e-4);
    expect(maxAbsDiff(wasm2, cpu2)).toBeLessThan(1e-4); // a stale s B^T is off by > 1e-2
  });

  it('runs each LoRA projection as one kernel of ours on wasm (x W^T + (x A^T) s B^T; under a tape one each way), the cpu logits and gradients', async () => {
    const run = async (backend: string) => {
      await tf.setBackend(backend);
      const m = loadLlama(config, parseSafetensors(weights, 'model.safetensors')); // ungrouped (the default)
      const set = lora(m);
      const p = await tf.profile(() => forward(m, [golden.input_ids]));
      const logits = (p.result as tf.Tensor).dataSync().slice();
      (p.result as tf.Tensor).dispose();
      const fused = p.kernels.filter((k) => k.name === 'SparringWasmLoraLinear').length;
      // Under a tape: one taped op per projection, one kernel of ours forward and one backward.
      let learnt = { loss: 0, grads: [] as Float32Array[] };
      const q = await tf.profile(() => {
        learnt = lossAndGrads(m, set);
        return [];
      });
      const taped = ['SparringWasmLoraFwd', 'SparringWasmLoraBwd'].map(
        (name) => q.kernels.filter((k) => k.name === name).length,
      );
      const adapters = set.adapters.length;
      set.dispose();
      disposeLlama(m);
      return { logits, fused, taped, adapters, ...learnt };
    };
    const cpu = await run('cpu');
    const wasm = await run('wasm');
    expect(wasm.adapters).toBe(7 * config.numLayers);
    expect(wasm.fused).toBe(wasm.adapters);
    expect(wasm.taped).toEqual([wasm.adapters, wasm.adapters]);
    expect(maxAbsDiff(wasm.logits, cpu.logits)).toBeLessThan(1e-4);
    expect(Math.abs(wasm.loss - cpu.loss)).toBeLessThan(1e-5);
    wasm.grads.forEach((g, i) => {
      const scale = Math.max(...Array.from(cpu.grads[i], Math.abs));
      expect(scale).toBeGreaterThan(0);
      expect(maxAbsDiff(g, cpu.grads[i])).toBeLessThan(1e-5 + 1e-4 * scale);
    });
  });
});

describe('matMul2d on wasm', () => {
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('matches tf.matMul on cpu, value and both gradients, for every transposition', async () => {
    const a0 = tf.randomNormal([5, 7], 0, 1, 'float32', 1).dataSync();
    const b0 = tf.randomNormal([7, 3], 0, 1, 'float32', 2).dataSync();
    const run = (ta: boolean, tb: boolean, mm: typeof matMul2d) => {
      const a = ta ? tf.tensor2d(a0, [5, 7]).transpose() : tf.tensor2d(a0, [5, 7]);
      const b = tb ? tf.tensor2d(b0, [7, 3]).transpose() : tf.tensor2d(b0, [7, 3]);
      const w = tf.randomNormal([5, 3], 0, 1, 'float32', 3);
      const f = (x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.mul(mm(x as tf.Tensor2D, y as tf.Tensor2D, ta, tb), w));
      const { value, grads } = tf.valueAndGrads(f)([a as tf.Tensor2D, b as tf.Tensor2D]);
      const out = [value, ...grads].map((t) => t.dataSync().slice());
      tf.dispose([a, b, w, value, ...grads]);
      return out;
    };
    await tf.setBackend('cpu');
    const stock = (a: tf.Tensor2D, b: tf.Tensor2D, ta = false, tb = false) => tf.matMul(a, b, ta, tb) as tf.Tensor2D;
    const refs = [false, true].flatMap((ta) => [false, true].map((tb) => run(ta, tb, stock)));
    await tf.setBackend('wasm');
    const gots = [false, true].flatMap((ta) => [false, true].map((tb) => run(ta, tb, matMul2d)));
    gots.forEach((got, i) => got.forEach((g, j) => expect(maxAbsDiff(g, refs[i][j])).toBeLessThan(1e-5)));
  });

  it('runs one product per projection group: 4 per layer (q/k/v, o, gate/up, down) and the head', async () => {
    await tf.setBackend('wasm');
    const m = load();
    const names: string[] = [];
    const p = await tf.profile(() => forward(m, [golden.input_ids]));
    (p.result as tf.Tensor).dispose();
    // Rank-2 products but RoPE's half swap (a [D, D] permutation, engine/kernels/rope).
    const D = config.headDim;
    for (const k of p.kernels)
      if (k.name === 'BatchMatMul' && k.inputShapes[0].length === 2 && `${k.inputShapes[1]}` !== `${D},${D}`)
        names.push(`${k.inputShapes[1]}`);
    disposeLlama(m);
    expect(names).toHaveLength(4 * config.numLayers + 1); // one by one: 7 per layer
  });

  it('turns no rank-2 operand with a Transpose kernel in a forward and backward (our GEMM takes them as they are)', async () => {
    // engine/kernels/wasmGemm.ts serves every transpose pair; tfjs-wasm's stock kernel served only
    // untransposed rank-2 products fast, and the code turned operands itself for it.
    await tf.setBackend('wasm');
    const m = load();
    const set = lora(m);
    const p = await tf.profile(() => {
      lossAndGrads(m, set);
      return [];
    });
    set.dispose();
    disposeLlama(m);
    // The tied embedding's rows are gathered from E^T by a kernel of ours too (wasmGatherColumns).
    const turned = p.kernels.filter((k) => k.name === 'Transpose' && k.inputShapes[0].length === 2);
    expect(turned.map((k) => `${k.inputShapes[0]}`)).toEqual([]);
    expect(p.kernels.filter((k) => k.name === 'SparringWasmGatherColumns')).toHaveLength(1);
    expect(p.kernels.some((k) => k.name === 'BatchMatMul')).toBe(true);
  });
});
