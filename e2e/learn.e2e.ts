// The planned learning step (src/engine/plan/learnPlan.ts, src/model/plannedLearn.ts) in Node +
// Dawn on SwiftShader's Vulkan driver: per-token statistics and LoRA gradients against tfjs
// autodiff of the same loss on the same batch (src/rl's formulas through tf.variableGrads over the
// op-by-op path), against finite differences, on f32 / int8 / int4 bases, LoRA subsets and a
// left-padded GQA batch; no GPU buffer made after warm-up; no uncaptured WebGPU error.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { startDawn } from '../src/cli/node/dawn';
import { webgpuDevice } from '../src/engine/kernels/wgslProgram';
import { parseModelConfig } from '../src/model/config';
import { disposeLlama, loadLlama, type LlamaModel, type LoadOptions } from '../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../src/model/lora';
import { plannedLearnForward } from '../src/model/plannedLearn';
import { int4Quantizer, int8Quantizer } from '../src/model/quant';
import { parseSafetensors } from '../src/model/safetensors';
import { mulberry32 } from '../src/model/random';
import { packSequences, policyAndReferenceStats, policyStats, type ResponseBatch } from '../src/rl/policy';
import { actorLoss, ppoClipLoss } from '../src/rl/policyLoss';
import { klPenalty } from '../src/rl/kl';
import { lossGradsAt, type StatTensors } from '../src/rl/plannedLoss';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startDawn({ swiftshader: true });
  webgpuDevice().addEventListener('uncapturederror', (e) => gpuErrors.push((e as GPUUncapturedErrorEvent).error.message));
});
afterAll(() => {
  expect(gpuErrors).toEqual([]);
});

function fixture(name: string, opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('..', 'shared', 'fixtures', name);
  return loadLlama(parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')), parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))), opts);
}

/** Adapters with B drawn too (a fresh B = 0 would leave dA = 0 and hide a wrong dA). */
function adapters(model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3, ...cfg });
  const rand = mulberry32(11);
  for (const a of set.adapters) {
    const b = Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2);
    a.B.assign(tf.tensor2d(b, a.B.shape as [number, number]));
  }
  return set;
}

// Three rows: prompts of 3, 5 and 2 tokens (left padding), 4 response tokens, row 1 stopped after 2.
const BATCH: ResponseBatch = {
  prompts: [[5, 9, 17], [3, 44, 12, 8, 30], [61, 2]],
  responses: [[7, 21, 33, 4], [50, 6, 0, 0], [13, 13, 40, 9]],
  mask: [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]],
};
const B = 3;
const T = 4;
const TEMP = 0.7;
const OLD = [[-3.1, -2.0, -4.2, -3.3], [-2.5, -3.9, 0, 0], [-4.0, -1.2, -3.0, -2.2]];
const ADV = [[0.8, 0.8, 0.8, 0.8], [-1.1, -1.1, -1.1, -1.1], [0.3, 0.3, 0.3, 0.3]];

/** GRPO's default: PPO clip, token-mean; with an entropy bonus and a k3 KL term to the reference. */
function grpoLoss(s: StatTensors, refLogp: tf.Tensor2D, withTerms: boolean): tf.Scalar {
  const mask = tf.tensor2d(BATCH.mask);
  const pg = ppoClipLoss({ logp: s.logp, oldLogp: tf.tensor2d(OLD), advantages: tf.tensor2d(ADV), mask }).loss;
  if (!withTerms) return pg;
  return actorLoss({ pgLoss: pg, mask, entropy: s.entropy, entropyCoeff: 0.01, kl: klPenalty(s.logp, refLogp, 'k3'), klCoef: 0.05 });
}

interface Compared {
  stats: number;
  loss: [number, number];
  /** Per variable: max |planned - tfjs| / max |tfjs|. */
  rel: number[];
  gradNorm: number;
}

/** Statistics, loss and every LoRA gradient of the planned path against tfjs autodiff. */
async function compare(model: LlamaModel, set: LoraSet, withTerms = true): Promise<Compared> {
  const ref = policyAndReferenceStats(model, set, BATCH, { temperature: TEMP });
  const refLogp = ref.refLogp;
  const want = { logp: await ref.logp.data(), entropy: await ref.entropy.data(), refLogp: await refLogp.data() };
  const vars = set.variables();
  const { value, grads } = tf.variableGrads(() => grpoLoss(policyStats(model, BATCH, { temperature: TEMP }), refLogp, withTerms), vars);
  const tfLoss = (await value.data())[0];

  const packed = packSequences(BATCH);
  const got = await plannedLearnForward(model, set, packed, TEMP, true);
  let stats = 0;
  for (let i = 0; i < B * T; i++) {
    stats = Math.max(stats, Math.abs(got.logp[i] - want.logp[i]), Math.abs(got.entropy[i] - want.entropy[i]), Math.abs(got.refLogp![i] - want.refLogp[i]));
  }
  const lg = await lossGradsAt(got.logp, got.entropy, B, T, (s) => grpoLoss(s, refLogp, withTerms));
  got.plan.backward(lg.dlogp, lg.dentropy);
  const flat = await got.plan.readGrads();
  const rel: number[] = [];
  let sq = 0;
  let at = 0;
  for (const v of vars) {
    const g = (await grads[v.name].data()) as Float32Array;
    let num = 0;
    let den = 0;
    for (let i = 0; i < g.length; i++) {
      num = Math.max(num, Math.abs(flat[at + i] - g[i]));
      den = Math.max(den, Math.abs(g[i]));
      sq += flat[at + i] ** 2;
    }
    rel.push(num / den);
    at += g.length;
  }
  expect(at).toBe(got.plan.paramCount);
  if (process.env.LEARN_DEBUG) console.log('rel', rel.map((r) => r.toExponential(1)).join(' '), 'norm', Math.sqrt(sq), 'loss', lg.loss, tfLoss);
  tf.dispose([ref.logp, ref.entropy, refLogp, value, ...Object.values(grads)]);
  return { stats, loss: [lg.loss, tfLoss], rel, gradNorm: Math.sqrt(sq) };
}

describe('planned LoRA learning step on Dawn (SwiftShader): against tfjs autodiff', () => {
  it('f32 base, LoRA on all projections, GRPO loss with entropy bonus and KL: statistics, loss and gradients', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model);
      const c = await compare(model, set);
      expect(c.stats).toBeLessThan(1e-4);
      expect(Math.abs(c.loss[0] - c.loss[1])).toBeLessThan(1e-5 * Math.max(1, Math.abs(c.loss[1])));
      expect(c.gradNorm).toBeGreaterThan(1e-3);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });
});

describe('planned LoRA learning step on Dawn (SwiftShader): quantised bases and LoRA subsets', () => {
  for (const [name, quantize] of [
    ['int8 (groups of 16)', int8Quantizer({ groupSize: 16 })],
    ['int4 (groups of 16)', int4Quantizer(16)],
  ] as const) {
    it(`${name} base: dx through the packed words, gradients within 1e-4 of tfjs`, async () => {
      const model = fixture('tiny-llama-f32', { quantize });
      try {
        const c = await compare(model, adapters(model));
        expect(c.stats).toBeLessThan(1e-4);
        expect(Math.max(...c.rel)).toBeLessThan(1e-4);
      } finally {
        disposeLlama(model);
      }
    });
  }

  it('LoRA on q and v of layer 1 only, rank 2 (pg loss only)', async () => {
    const model = fixture('tiny-llama-f32');
    try {
      const set = adapters(model, { r: 2, alpha: 4, targets: ['q', 'v'], layers: [1] });
      const c = await compare(model, set, false);
      expect(c.rel.length).toBe(4);
      expect(Math.max(...c.rel)).toBeLessThan(1e-4);
    } finally {
      disposeLlama(model);
    }
  });
});
