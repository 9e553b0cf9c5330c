// An audit that every recipe's learning step takes the planned WebGPU path (issue 21: "every
// recipe's learning step runs on the planned path on WebGPU"), Node + Dawn on SwiftShader: each of
// the nine recipes runs on the tiny fixture with a tiny config, and every model it trains (each
// model a LoRA is attached to; both players where a recipe trains two) learned at least one
// micro-batch on the planned path, counted per model. LoRA dropout 0.05 (PEFT's usual value) is
// set everywhere: it once sent every step to tfjs. Token Buncher's TokenNoiser SFT step too: its
// loss and LoRA gradients on the plan (the hidden-row form) against tfjs's full-vocabulary loss.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { nodeRecipeEnv } from '../src/cli/recipe-env';
import { disposeLlama, forward, type LlamaModel } from '../src/model/llama';
import { createRun, recipeNames } from '../src/recipes/registry';
import { letterJudge, loadWithCharCodec } from '../dev/test/recipeTesting';
import { plannedGrads, plannedLearnBlocker } from '../src/rl/plannedLearn';
import { plannedMicroBatches, plannedMicroBatchesOf } from '../src/model/planned/learnStep';
import type { LoraSet } from '../src/model/lora';
import { int4Quantizer } from '../src/model/quant';
import { noiserSftStep } from '../src/recipes/tokenbuncher/tokenbuncher';
import { AdamW } from '../src/rl/optim';
import { packSequences } from '../src/rl/policy';
import {
  tokenNoiserHeadTerms,
  tokenNoiserLoss,
  tokenNoiserLossFromHidden,
  tokenNoiseWeights,
} from '../src/rl/tokenNoiser';
import { fromRows } from '../src/rl/types';
import { adapters, ALL, B, BATCH, fixture, maxAbs, T } from './learnFixture';
import { learnStepBuffers } from '../src/contract/learnMemory';
import { useDawn } from './dawnSetup';
import { denseJudge, familyCopies, tinyRecipes, trainedLora, TRAINED_MODELS } from '../dev/test/tinyRecipes';
import { plannedDecodeFor, plannedForcedLogits, releaseDecodePlans } from '../src/model/planned/decode';
import { tfjsPrefixLogits } from './tfjsPrefix';
import { setEngineOptions } from '../src/engine/options';

useDawn(() => {
  setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned' });
});

const M = 'tiny-llama-f32';
const loaded: LlamaModel[] = [];
const env = nodeRecipeEnv({
  modelsDir: resolve('dev', 'fixtures'),
  load: async (folder, ref, opts) => {
    const m = await loadWithCharCodec(folder, ref, opts);
    loaded.push(m.model);
    return m;
  },
  judges: { letters: letterJudge },
});

const lora = { loraDropout: 0.05 };
const RECIPES = tinyRecipes(M);
const TRAINED = TRAINED_MODELS;

describe('every recipe learns on the planned path on WebGPU (Dawn, SwiftShader)', () => {
  it('the audit covers the nine built-in recipes', () => {
    expect(Object.keys(RECIPES).sort()).toEqual([...recipeNames()].sort());
  });

  const cases = [
    ...Object.entries(RECIPES).map(([name, c]) => ({ label: name, name, ...c })),
    // A PPO critic (value head on the plan's final hidden rows, its own AdamW).
    {
      label: 'defend with a gae critic',
      name: 'defend',
      config: { ...RECIPES.defend.config, advantage: 'gae', criticLr: 1e-2 },
      steps: 1,
    },
  ];
  it('tokenbuncher with the TokenNoiser SFT step (noiserStart 0: step 0 is SFT): it learns on the plan', async () => {
    loaded.length = 0;
    const { run } = await createRun(
      env,
      'tokenbuncher',
      { ...RECIPES.tokenbuncher.config, ...lora, noiserStart: 0, groupSize: 4 },
      1,
    );
    try {
      const report = await run.step();
      expect(report.phase).toBe('noiser-sft');
      expect(report.metrics['noiser/tokens']).toBeGreaterThan(0);
      expect(Number.isFinite(report.metrics['loss/noiser'])).toBe(true);
      const [m] = loaded;
      expect(loaded.length).toBe(1);
      expect(plannedLearnBlocker(m, trainedLora(m)!)).toBeNull();
      expect(plannedMicroBatchesOf(m)).toBe(1);
    } finally {
      run.dispose();
    }
  });

  for (const { label, name, config, steps } of cases) {
    it(`${label}: every trained model's learning step took the planned path`, async () => {
      loaded.length = 0;
      const { run } = await createRun(env, name, { ...config, ...lora }, 1);
      try {
        for (let s = 0; s < steps; s++) await run.step();
        const trained = loaded.flatMap((m) => {
          const set = trainedLora(m);
          return set ? [{ planned: plannedMicroBatchesOf(m), blocker: plannedLearnBlocker(m, set) }] : [];
        });
        expect(trained.length).toBe(TRAINED[name] ?? 1);
        for (const x of trained) {
          expect(x.blocker).toBeNull();
          expect(x.planned).toBeGreaterThan(0);
        }
      } finally {
        run.dispose();
      }
    });
  }
});

// The same audit on Qwen3 (q/k norms, head_dim x heads != hidden, q/k/v/o biases, untied head) and
// Gemma 3 (scaled embedding, four norms a layer, GeGLU, query_pre_attn_scalar, windows shorter than
// the prompt with their own RoPE base, tied head), each recipe on one of the two (alternating: both
// for all nine took 80 s here, a shared 2-core machine): the trained models learned on the plan and
// decode on it, and after the step the planned decode with the trained adapters gives tfjs's logits
// (1e-4) on a prompt longer than the windows. familiesPlanned.e2e.ts holds the base models' planned
// logits to the float64 reference; src/recipes/familyRecipes.test.ts runs every recipe on both
// families on tfjs (hub id, folder, URL; f32, f16, int8) and checks their PEFT and veRL exports.
describe('every recipe on Qwen3 or Gemma 3 learns and decodes on the planned path', () => {
  const FAMILY = ['qwen3-bias', 'gemma3-tied'];
  const dir = familyCopies(FAMILY);
  const familyEnv = nodeRecipeEnv({
    load: async (folder, ref, opts) => {
      const m = await loadWithCharCodec(folder, ref, opts);
      loaded.push(m.model);
      return m;
    },
    judges: { letters: denseJudge },
  });
  const ids = [5, 9, 17, 3, 44, 12, 8, 30, 61, 7]; // 10 tokens: past the 4-slot windows
  const cases = recipeNames().map((recipe, i) => ({ recipe, name: FAMILY[i % 2] }));
  it.each(cases)(
    '$recipe on $name: planned learning steps, the planned decode, its logits with the trained adapters those of tfjs',
    async ({ recipe, name }) => {
      const { config, steps } = tinyRecipes(resolve(dir, name))[recipe];
      loaded.length = 0;
      const { run } = await createRun(familyEnv, recipe, config, 1);
      try {
        for (let s = 0; s < steps; s++) await run.step();
        const trained = loaded.filter((m) => trainedLora(m));
        expect(trained.length).toBe(TRAINED[recipe] ?? 1);
        for (const m of trained) {
          expect(m.config.family).toBe(name.split('-')[0]);
          expect(plannedLearnBlocker(m, trainedLora(m)!)).toBeNull();
          expect(plannedMicroBatchesOf(m)).toBeGreaterThan(0);
          expect(plannedDecodeFor(m)).not.toBeNull();
        }
        // A model whose adapters learned (minmax's policy step may see no reward spread in one step).
        const moved = await Promise.all(
          trained.map(async (t) =>
            (await Promise.all(trainedLora(t)!.adapters.map((a) => a.B.data()))).some((b) => b.some((x) => x !== 0)),
          ),
        );
        const m = trained[moved.indexOf(true)];
        expect(m, 'a trained model learned').toBeDefined();
        const prompt = [ids.slice(0, 3)];
        const forced = ids.slice(3).map((id) => [id]);
        const planned = await plannedForcedLogits(m, prompt, forced);
        const ref = await tfjsPrefixLogits(m, prompt, forced);
        expect(Math.max(...planned.map((l, t) => maxAbs(l, ref[t + 1])))).toBeLessThan(1e-4);
        // and the adapters count: without them the logits move by over 100x the bound (measured 0.045 to 0.17)
        const set = trainedLora(m)!;
        set.enabled = false;
        try {
          const base = await tfjsPrefixLogits(m, prompt, forced);
          expect(Math.max(...base.map((l, t) => maxAbs(l, ref[t])))).toBeGreaterThan(1e-2);
        } finally {
          set.enabled = true;
        }
        loaded.forEach(releaseDecodePlans);
      } finally {
        run.dispose();
      }
    },
  );
});

// Token Buncher's SFT mask (response mask x [advantage >= 0]): some response tokens left out.
const NOISER_MASK = [
  [1, 0, 1, 1],
  [1, 1, 0, 0],
  [0, 1, 1, 1],
];
const EPS = 0.1;
const SEED = 0x4015e;

/** The full-vocabulary TokenNoiser loss by tfjs autodiff (noiserSftStep's tfjs path): loss and each LoRA variable's gradient. */
async function tfjsNoiser(model: LlamaModel, set: LoraSet, n: tf.Tensor, targets: tf.Tensor, mask: tf.Tensor) {
  const packed = packSequences(BATCH);
  const P = packed.promptLength;
  const H = model.config.hiddenSize;
  const vars = set.variables();
  const { value, grads } = tf.variableGrads(() => {
    const hidden = forward(
      model,
      packed.ids.map((x) => x.slice(0, P + T - 1)),
      { attentionMask: packed.attentionMask.map((x) => x.slice(0, P + T - 1)), output: 'hidden' },
    );
    const h = hidden.slice([0, P - 1, 0], [B, T, H]).reshape([B * T, H]) as tf.Tensor2D;
    const logp = tf.logSoftmax(model.lmHead.forward(h), -1).reshape([B, T, model.config.vocabSize]);
    return tokenNoiserLoss(logp, targets, mask, { epsilon: EPS, weights: n });
  }, vars);
  const out = {
    loss: (await value.data())[0],
    grads: await Promise.all(vars.map(async (v) => (await grads[v.name].data()) as Float32Array)),
  };
  tf.dispose([value, ...Object.values(grads)]);
  return out;
}

describe('the TokenNoiser SFT step on the plan (Dawn, SwiftShader): equal to tfjs on the same batch and noise', () => {
  for (const [label, opts] of [
    ['f32', {}],
    ['int4 (groups of 32)', { quantize: int4Quantizer(32) }],
  ] as const) {
    it(`${label} base: the loss and every LoRA gradient within 1e-4 (relative) of tfjs autodiff`, async () => {
      const model = fixture('tiny-llama-f32', opts);
      const targets = tf.tensor2d(BATCH.responses.flat(), [B, T], 'int32');
      const mask = tf.tensor2d(NOISER_MASK);
      const n = tokenNoiseWeights(targets, model.config.vocabSize, { seed: SEED });
      try {
        const set = adapters(model);
        const want = await tfjsNoiser(model, set, n, targets, mask);
        const terms = tokenNoiserHeadTerms(model.lmHead, targets, n);
        const before = plannedMicroBatches();
        const got = await plannedGrads(model, set, BATCH, { hiddenGrad: true }, (s) =>
          tokenNoiserLossFromHidden(s.logp, s.hidden!, terms, mask, { epsilon: EPS }),
        );
        tf.dispose([terms.rows, terms.offset]);
        expect(got).not.toBeNull();
        expect(plannedMicroBatches()).toBe(before + 1);
        expect(Math.abs(got!.loss - want.loss) / Math.abs(want.loss)).toBeLessThan(1e-4);
        const gotGrads = await Promise.all(set.variables().map((v) => got!.grads[v.name].data()));
        const rel = gotGrads.map(
          (g, i) => maxAbs(g, want.grads[i]) / Math.max(...Array.from(want.grads[i]).map(Math.abs)),
        );
        expect(Math.max(...rel)).toBeLessThan(1e-4);
        tf.dispose(Object.values(got!.grads));
      } finally {
        tf.dispose([targets, mask, n]);
        disposeLlama(model);
      }
    });
  }

  it("noiserSftStep: the planned path (plan + planned AdamW; one pass, or the planner's micro-batches of one row) gives the tfjs path's loss, token count, grad norm and update", async () => {
    const model = fixture('tiny-llama-f32', { quantize: int4Quantizer(32) });
    try {
      const set = adapters(model);
      const start = set.variables().map((v) => v.clone());
      const startData = await Promise.all(start.map((t) => t.data()));
      const rollout = { rows: BATCH.prompts, gen: { tokens: BATCH.responses, mask: BATCH.mask } };
      const o = { epsilon: EPS, seed: SEED, lr: 1e-2, maxGradNorm: 1e9, pad: 0 };
      const runOn = async (path: 'planned' | 'tfjs', budget = 2 ** 31) => {
        set.variables().forEach((v, i) => v.assign(start[i]));
        setEngineOptions({ learnPath: path, optimizerPath: path, learnMemoryBudget: budget });
        const before = plannedMicroBatches();
        const m = await noiserSftStep(
          { model, lora: set, optimizer: new AdamW({ lr: o.lr, weightDecay: 0.01 }) },
          rollout,
          fromRows(NOISER_MASK),
          o,
        );
        return {
          m,
          planned: plannedMicroBatches() - before,
          after: await Promise.all(set.variables().map((v) => v.data())),
        };
      };
      const ref = await runOn('tfjs');
      const got = await runOn('planned');
      // A budget of one row: the planner's micro-batches, 3 plans accumulated into one update.
      const oneRow = await runOn(
        'planned',
        learnStepBuffers(model.config, { r: 4, targets: ALL }, { promptLen: 8, responseLen: T }, 1).reduce(
          (a, b) => a + b.bytes * b.count,
          0,
        ),
      );
      expect(ref.planned).toBe(0);
      expect(got.planned).toBe(1);
      expect(oneRow.planned).toBe(3);
      const moved = Math.max(...ref.after.map((a, i) => maxAbs(a, startData[i])));
      expect(moved).toBeGreaterThan(o.lr / 2);
      for (const x of [got, oneRow]) {
        expect(x.m['noiser/tokens']).toBe(8);
        expect(x.m['grad/skipped']).toBe(0);
        expect(Math.abs(x.m['loss/noiser'] - ref.m['loss/noiser']) / ref.m['loss/noiser']).toBeLessThan(1e-4);
        expect(Math.abs(x.m['grad/norm'] - ref.m['grad/norm']) / ref.m['grad/norm']).toBeLessThan(1e-4);
        // The updates agree (AdamW's first step moves each entry by about lr).
        expect(Math.max(...x.after.map((a, i) => maxAbs(a, ref.after[i])))).toBeLessThan(o.lr * 1e-2);
      }
      expect(ref.m['noiser/tokens']).toBe(8);
      tf.dispose(start);
    } finally {
      setEngineOptions({ learnPath: 'planned', optimizerPath: 'planned', learnMemoryBudget: 2 ** 31 });
      disposeLlama(model);
    }
  });
});
