// learnStep's update on the planned GPU optimiser (src/rl/plannedOptim.ts) in Node + Dawn on
// SwiftShader: GRPO steps on the tiny-llama fixture against the same steps on tfjs's AdamW, a
// checkpoint (the recipes' payload: PEFT-named adapters and exp_avg / exp_avg_sq moments)
// reproducing the next step exactly, and the switch flipped mid-run.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDawn } from '../src/cli/node/dawn';
import { countGpuWork } from '../dev/bench/gpuCounters';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { parseModelConfig } from '../src/contract/modelConfig';
import { disposeLlama, loadLlama, type LlamaModel } from '../src/model/llama';
import { attachLora, type LoraSet } from '../src/model/lora';
import { parseSafetensors } from '../src/model/safetensors';
import { exportLoraState, importLoraState } from '../src/recipes/kit/state';
import { rlStep } from '../src/rl/loop';
import { AdamW } from '../src/rl/optim';
import { plannedUpdate, type OptimizerPath } from '../src/rl/plannedOptim';
import { setEngineOptions } from '../src/engine/options';

const gpuErrors: string[] = [];
let model: LlamaModel;
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    gpuErrors.push((e as GPUUncapturedErrorEvent).error.message),
  );
  const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
  model = loadLlama(
    parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')),
    parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
  );
});
afterAll(() => {
  setEngineOptions({ optimizerPath: 'planned' });
  disposeLlama(model);
});

const PROMPTS = [
  [1, 5, 9, 13],
  [1, 40, 2, 7, 30],
];

interface Run {
  lora: LoraSet;
  optimizer: AdamW;
  step(s: number, path: OptimizerPath): Promise<Record<string, number>>;
  weights(): Promise<Float32Array[]>;
  dispose(): void;
}

function run(): Run {
  const lora = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3 });
  const optimizer = new AdamW({ lr: 5e-3, beta2: 0.95, weightDecay: 0.1 });
  return {
    lora,
    optimizer,
    async step(s, path) {
      setEngineOptions({ optimizerPath: path });
      const r = await rlStep(
        {
          learner: { model, lora, optimizer },
          rewardFn: ({ response }) => response.filter((t) => t % 3 === 0).length / response.length,
        },
        PROMPTS,
        s,
        {
          groupSize: 3,
          maxNewTokens: 4,
          temperature: 1,
          seed: 17,
          advantage: 'grpo',
          // lr warm-up over the first steps; a small max norm so clipping binds.
          lr: (k) => 5e-3 * Math.min(1, (k + 1) / 2),
          trainer: { policyLoss: 'ppo', maxGradNorm: 0.05 },
        },
      );
      return r.metrics;
    },
    async weights() {
      return Promise.all(lora.variables().map(async (v) => Float32Array.from(await v.data())));
    },
    dispose() {
      optimizer.dispose();
      lora.dispose();
    },
  };
}

/** Largest |got - want| over max |want| of the tensor (B starts at zero: per-element ratios near it mean nothing). */
function relErr(got: Float32Array[], want: Float32Array[]): number {
  let worst = 0;
  got.forEach((g, i) => {
    const w = want[i];
    const scale = w.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
    let d = 0;
    for (let j = 0; j < w.length; j++) d = Math.max(d, Math.abs(g[j] - w[j]));
    worst = Math.max(worst, scale > 0 ? d / scale : d);
  }, 300_000);
  return worst;
}

describe('learnStep on the planned GPU optimiser, Dawn (SwiftShader)', () => {
  it('three GRPO steps: adapter weights within 1e-6 of the tfjs optimiser, same norms and step count; clipping binds', async () => {
    const runs: Record<OptimizerPath, { w: Float32Array[]; norms: number[]; step: number }> = {} as never;
    for (const path of ['tfjs', 'planned'] as const) {
      const r = run();
      try {
        const norms: number[] = [];
        for (let s = 0; s < 3; s++) norms.push((await r.step(s, path))['grad/norm']);
        runs[path] = { w: await r.weights(), norms, step: r.optimizer.step };
        expect(r.optimizer.momentHolder === null).toBe(path === 'tfjs');
      } finally {
        r.dispose();
      }
    }
    expect(runs.planned.step).toBe(3);
    expect(runs.tfjs.step).toBe(3);
    runs.planned.norms.forEach((n, i) =>
      expect(Math.abs(n - runs.tfjs.norms[i]) / runs.tfjs.norms[i]).toBeLessThan(1e-5),
    );
    expect(Math.min(...runs.tfjs.norms)).toBeGreaterThan(0.05);
    // The update moved the adapters (B from zero), and both paths moved them alike.
    expect(Math.max(...runs.planned.w[1].map(Math.abs))).toBeGreaterThan(1e-3);
    expect(relErr(runs.planned.w, runs.tfjs.w)).toBeLessThan(1e-6);
    expect(gpuErrors).toEqual([]);
  }, 300_000);

  it('a checkpoint at step 2 (adapters + moments from the GPU) reproduces step 3 exactly', async () => {
    const r = run();
    try {
      await r.step(0, 'planned');
      await r.step(1, 'planned');
      // The recipes' checkpoint payload, through a structured clone as IndexedDB stores it.
      const saved = structuredClone(await exportLoraState(r.lora, r.optimizer));
      expect(saved.optimizer.state.step).toBe(2);
      expect(saved.optimizer.tensors.length).toBe(2 * r.lora.variables().length);
      expect(saved.optimizer.tensors.some((t) => t.data.some((x) => x !== 0))).toBe(true);
      await r.step(2, 'planned');
      const straight = await r.weights();
      const straightState = await exportLoraState(r.lora, r.optimizer);
      importLoraState(r.lora, r.optimizer, saved);
      expect(r.optimizer.step).toBe(2);
      await r.step(2, 'planned');
      expect(await r.weights()).toEqual(straight);
      const again = await exportLoraState(r.lora, r.optimizer);
      expect(again.optimizer.state.step).toBe(3);
      again.optimizer.tensors.forEach((t, i) => expect(t.data).toEqual(straightState.optimizer.tensors[i].data));
    } finally {
      r.dispose();
    }
  }, 300_000);

  it('the switch flipped mid-run: planned, planned, tfjs matches tfjs x 3 (the moments come back to tfjs)', async () => {
    const mixed = run();
    let w: Float32Array[];
    try {
      await mixed.step(0, 'planned');
      await mixed.step(1, 'planned');
      await mixed.step(2, 'tfjs');
      expect(mixed.optimizer.momentHolder).toBe(null);
      expect(mixed.optimizer.step).toBe(3);
      w = await mixed.weights();
    } finally {
      mixed.dispose();
    }
    const ref = run();
    try {
      for (let s = 0; s < 3; s++) await ref.step(s, 'tfjs');
      expect(relErr(w, await ref.weights())).toBeLessThan(1e-6);
    } finally {
      ref.dispose();
    }
  });

  it('the update alone: 3 dispatches and no GPU buffer once warm; a NaN gradient skips it', async () => {
    const r = run();
    try {
      const vars: Record<string, tf.Variable> = {};
      for (const v of r.lora.variables()) vars[v.name] = v;
      const grads = () => Object.fromEntries(Object.values(vars).map((v) => [v.name, tf.onesLike(v) as tf.Tensor]));
      for (let k = 0; k < 2; k++) {
        const g = grads();
        await plannedUpdate(r.optimizer, vars, g, 1e-3, 1);
        tf.dispose(Object.values(g));
      }
      const g = grads();
      const { counts } = await countGpuWork(() => plannedUpdate(r.optimizer, vars, g, 1e-3, 1));
      tf.dispose(Object.values(g));
      expect(counts.dispatches).toBe(3);
      expect(counts.buffersCreated).toBe(0);
      expect(counts.readbacks).toBe(1);
      const before = await r.weights();
      const bad = grads();
      const first = Object.keys(bad)[0];
      bad[first].dispose();
      bad[first] = tf.fill(vars[first].shape, NaN);
      const res = await plannedUpdate(r.optimizer, vars, bad, 1e-3, 1);
      tf.dispose(Object.values(bad));
      expect(res.skipped).toBe(true);
      expect(r.optimizer.step).toBe(3);
      expect(await r.weights()).toEqual(before);
    } finally {
      r.dispose();
    }
  });
});
