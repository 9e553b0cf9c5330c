// Qwen3 and Gemma 3 on WebGPU (Node + Dawn on SwiftShader, the custom WGSL kernels on): the tfjs
// forward with the RMSNorm kernel on per-head q/k norms, the RoPE kernel on each layer's table, the
// windowed masks, the GeGLU kernel and the fused decode attention of KV-cache steps, against the float64 NumPy
// reference of dev/fixtures/families (1e-4). The planned decode runs these blocks too
// (familiesPlanned.e2e.ts) and draws what the tfjs path draws.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { useDawn } from './dawnSetup';
import { customKernelsActive } from '../src/engine/webgpu/wgslProgram';
import { resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { parseModelConfig } from '../src/contract/modelConfig';
import { parseSafetensors } from '../src/model/safetensors';
import { createKVCache, disposeKVCache, disposeLlama, forward, loadLlama } from '../src/model/llama';
import { generationAgainstTfjs } from './tfjsPrefix';
import { plannedDecodeFor } from '../src/model/planned/decode';
import { maxAbs } from '../dev/test/maxAbs';
import { blockCaseData, geglu, gegluCase, swiglu } from '../src/engine/index';
import { swigluF64 } from '../src/engine/kernels/swiglu/fusedBlockReference';

useDawn(() => resetEngineOptions());

interface Golden {
  input_ids: number[];
  logits: number[][];
}
const load = (dir: string) => {
  const d = resolve(dir);
  const config = parseModelConfig(readFileSync(`${d}/config.json`, 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(`${d}/model.safetensors`)));
  return { model: loadLlama(config, st), golden: JSON.parse(readFileSync(`${d}/golden.json`, 'utf8')) as Golden };
};

describe.each(['qwen3-bias', 'gemma3-tied'])('%s on WebGPU', (name) => {
  it('full forward and KV-cache steps (fused decode attention) within 1e-4 of the float64 reference', async () => {
    expect(customKernelsActive()).toBe(true);
    const { model, golden } = load(`dev/fixtures/families/${name}`);
    try {
      const ids = golden.input_ids;
      const full = forward(model, [ids]);
      expect(maxAbs(await full.data(), golden.logits.flat())).toBeLessThan(1e-4);
      const cache = createKVCache(model, 1, 16);
      const parts = [forward(model, [ids.slice(0, 3)], { cache })];
      for (let i = 3; i < ids.length; i++) parts.push(forward(model, [[ids[i]]], { cache }));
      const stitched = tf.concat(parts, 1);
      expect(maxAbs(await stitched.data(), golden.logits.flat())).toBeLessThan(1e-4);
      tf.dispose([full, stitched, ...parts]);
      disposeKVCache(cache);
    } finally {
      disposeLlama(model);
    }
  }, 300_000);

  // One family is enough (each generation compiles tfjs's WebGPU kernels: ~30 s here). The draws'
  // reference is one teacher-forced tfjs forward over them (generationAgainstTfjs), which checks every
  // step's logits too; a tfjs generation instead cost most of this case's 5.4 s on CI.
  it.runIf(name === 'gemma3-tied')(
    'the planned decode runs the block and draws what the tfjs path draws',
    async () => {
      const { model, golden } = load(`dev/fixtures/families/${name}`);
      try {
        const prompts = [golden.input_ids.slice(0, 5), golden.input_ids.slice(0, 3)];
        setEngineOptions({ decodePath: 'planned' });
        const got = await generationAgainstTfjs(model, prompts, { maxNewTokens: 4, temperature: 1, seed: 11 });
        expect(got.tokens[0].length).toBe(4);
      } finally {
        resetEngineOptions();
        disposeLlama(model);
      }
    },
    300_000,
  );
});

it('the GeGLU kernel (shaders/swiglu/op_geglu.wgsl) and its gradient against float64, saturated gates included', async () => {
  expect(customKernelsActive()).toBe(true);
  const d = gegluCase(1000, 7);
  const g = tf.tensor1d(d.g);
  const u = tf.tensor1d(d.u);
  const dy = tf.tensor1d(d.dy);
  const rel = (a: ArrayLike<number>, b: ArrayLike<number>) =>
    Math.max(...Array.from(b, (v, i) => Math.abs(a[i] - v) / Math.max(1, Math.abs(v))));
  const y = geglu(g, u);
  expect(rel(await y.data(), d.y)).toBeLessThan(1e-5);
  const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(geglu(a, b), dy)))([g, u]);
  expect(rel(await dg.data(), d.dg)).toBeLessThan(1e-5);
  expect(rel(await du.data(), d.du)).toBeLessThan(1e-5);
  tf.dispose([g, u, dy, y, dg, du]);
});

it('the SwiGLU kernel, on the same gated-op wrapper, and its gradient against float64', async () => {
  const d = blockCaseData({ n: 1000, batch: 1, heads: 1, capacity: 1, headDim: 1, len: 1, start: 0, seed: 9 });
  const ref = swigluF64(d);
  const [g, u, dy] = [tf.tensor1d(d.g), tf.tensor1d(d.u), tf.tensor1d(d.dy)];
  const y = swiglu(g, u);
  expect(maxAbs(await y.data(), ref.y)).toBeLessThan(1e-5);
  const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(swiglu(a, b), dy)))([g, u]);
  expect(maxAbs(await dg.data(), ref.dg)).toBeLessThan(1e-5);
  expect(maxAbs(await du.data(), ref.du)).toBeLessThan(1e-5);
  tf.dispose([g, u, dy, y, dg, du]);
});

it('the tiny Llama fixture is plannable (the gate refuses by block, not by everything)', () => {
  setEngineOptions({ decodePath: 'planned' });
  const { model } = load('dev/fixtures/tiny-llama-f32');
  try {
    expect(plannedDecodeFor(model)).not.toBeNull();
  } finally {
    resetEngineOptions();
    disposeLlama(model);
  }
});
