// The planned decode path (src/engine/plan/, src/model/planned/decode.ts) in Node + Dawn on
// SwiftShader's Vulkan driver: against the golden fixtures and against the tfjs op-by-op path on
// the same weights (f32, f16, int8, int4; LoRA on and off; left-padded batches; GQA), draw for draw,
// with its dispatch budget and no buffer made after warm-up.
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { laneCliFlags, startLaneDawn } from './dawnLane';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { DecodePlan } from '../src/engine/plan/decodePlan';
import { maxAbs } from '../dev/test/maxAbs';
import { parseModelConfig } from '../src/contract/modelConfig';
import { generate, type GenerateOptions } from '../src/model/generate';
import { disposeLlama, loadLlama, type LlamaModel } from '../src/model/llama';
import { attachLora } from '../src/model/lora';
import {
  plannedDispatches,
  plannedForcedLogits,
  plannedPrefillLogits,
  releaseDecodePlans,
} from '../src/model/planned/decode';
import { prefillChunk, SPLITK_MIN_CAPACITY } from '../src/engine/plan/decodePlan';
import { SPLITK_SEGMENT } from '../src/engine/plan/decodeKernels';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../src/model/quant';
import { parseSafetensors } from '../src/model/safetensors';
import { syntheticModel } from '../dev/bench/synthetic';
import type { LoadOptions } from '../src/model/llama';
import { setEngineOptions } from '../src/engine/options';
import { drawsFromLogits, generationAgainstTfjs, tfjsPrefixLogits, tfjsLogits } from './tfjsPrefix';

const gpuErrors: string[] = [];
beforeAll(async () => {
  await startLaneDawn();
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    gpuErrors.push((e as GPUUncapturedErrorEvent).error.message),
  );
});
afterAll(() => {
  setEngineOptions({ decodePath: 'planned', prefillPath: 'planned', tokensPerRun: 8 });
});

interface Golden {
  input_ids: number[];
  logits: number[][];
  greedy_continuation: number[];
}

function fixture(name: string, opts: LoadOptions = {}): { model: LlamaModel; golden: Golden } {
  const dir = resolve('dev', 'fixtures', name);
  const golden = JSON.parse(readFileSync(resolve(dir, 'golden.json'), 'utf8')) as Golden;
  const config = parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8'));
  // The long-prompt tests cross three 256-slot split-K segments (528 positions); the fixtures'
  // context of 256 is only their config's number (plain RoPE, no scaling), so it is lifted here and
  // generate's context check (model/contextBound.ts) still guards every product path.
  const model = loadLlama(
    { ...config, maxPositionEmbeddings: Math.max(config.maxPositionEmbeddings, 1024) },
    parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
    opts,
  );
  return { model, golden };
}

/** The tfjs path's generation and the planned path's (the greedy continuations against the golden one). */
async function bothPaths(model: LlamaModel, prompts: number[][], opts: GenerateOptions) {
  setEngineOptions({ decodePath: 'tfjs' });
  const ref = await generate(model, prompts, opts);
  setEngineOptions({ decodePath: 'planned' });
  const got = await generate(model, prompts, opts);
  return { ref, got };
}

/** Worst |planned - tfjs| of the planned prefill's last logits and of each teacher-forced step's. */
async function againstTfjs(
  model: LlamaModel,
  prompts: number[][],
  forced: number[][],
): Promise<{ prefill: number; steps: number }> {
  const prefill = await plannedPrefillLogits(model, prompts);
  const ref = await tfjsPrefixLogits(model, prompts, forced);
  const planned = await plannedForcedLogits(model, prompts, forced);
  return { prefill: maxAbs(prefill, ref[0]), steps: Math.max(...planned.map((p, t) => maxAbs(p, ref[t + 1]))) };
}

/** Teacher-forces `steps` tokens after left-padded prompts and compares every step's logits with tfjs. */
async function forcedAgainstTfjs(model: LlamaModel, prompts: number[][], forced: number[][]): Promise<number> {
  const planned = await plannedForcedLogits(model, prompts, forced);
  const ref = await tfjsPrefixLogits(model, prompts, forced);
  return Math.max(...planned.map((p, t) => maxAbs(p, ref[t + 1])));
}

describe('planned decode on Dawn (SwiftShader): the tiny-llama fixtures', () => {
  for (const name of ['tiny-llama-f32', 'tiny-llama']) {
    it(`${name}: teacher-forced planned logits within 1e-3 of the golden float64 reference and 1e-4 of tfjs`, async () => {
      const { model, golden } = fixture(name);
      try {
        const k = 4;
        const forced = golden.input_ids.slice(k).map((id) => [id]);
        const planned = await plannedForcedLogits(model, [golden.input_ids.slice(0, k)], forced);
        // planned[t] follows input_ids[k + t]: golden logits of that position.
        const worstGolden = Math.max(...planned.map((l, t) => maxAbs(l, golden.logits[k + t])));
        expect(worstGolden).toBeLessThan(1e-3);
        expect(await forcedAgainstTfjs(model, [golden.input_ids.slice(0, k)], forced)).toBeLessThan(1e-4);
      } finally {
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });

    it(`${name}: the greedy continuation is exact and equals the tfjs path's, log-probs within 1e-4`, async () => {
      const { model, golden } = fixture(name);
      try {
        const { ref, got } = await bothPaths(model, [golden.input_ids], {
          maxNewTokens: golden.greedy_continuation.length,
          greedy: true,
        });
        expect(got.tokens[0]).toEqual(golden.greedy_continuation);
        expect(got.tokens).toEqual(ref.tokens);
        expect(maxAbs(got.logprobs.flat(), ref.logprobs.flat())).toBeLessThan(1e-4);
        expect(maxAbs(got.entropy.flat(), ref.entropy.flat())).toBeLessThan(1e-4);
      } finally {
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });
  }

  const prompts = [
    [1, 5, 9, 13, 17, 21, 25],
    [1, 40, 2],
    [1, 7, 7, 7, 30],
  ];
  const forced = Array.from({ length: 6 }, (_, t) => prompts.map((_, b) => (11 * t + 5 * b + 3) % 64));
  // Prompts over several split-K segments: 520, 12 and 250 real tokens left-padded to 528 slots
  // (whole prefill chunks of 16), so the cache spans three 256-slot segments; row 1's 516 pads leave
  // segments 0 and 1 with no valid slot, row 2's 278 pads segment 0 and part of segment 1. (Each
  // tfjs reference forward costs in proportion to the padded length: 528 slots, not 608 as with
  // 600-token prompts, which proved no more.)
  const longPrompts = [520, 12, 250].map((n, b) => [
    1,
    ...Array.from({ length: n - 1 }, (_, t) => ((7 * b + 13 * t + 3) % 61) + 3),
  ]);

  for (const [format, quantize, shape] of [
    ['f32', undefined, 'thread'],
    ['int8', int8Quantizer(), 'thread'],
    ['int4', int4Quantizer(32), 'thread'],
    ['f32', undefined, 'split'],
    ['int8', int8Quantizer(), 'split'],
    ['int4', int4Quantizer(32), 'split'],
    ['f32', undefined, 'tile'],
    ['int8', int8Quantizer(), 'tile'],
    ['int4', int4Quantizer(32), 'tile'],
    ['f16', f16Quantizer(), 'thread'],
    ['f16', f16Quantizer(), 'split'],
    ['f16', f16Quantizer(), 'tile'],
  ] as const) {
    it(`${format}, ${shape} GEMV: left-padded GQA batch, teacher-forced logits within 1e-4 of tfjs; seeded sampling draw for draw`, async () => {
      const { model } = fixture('tiny-llama-f32', quantize ? { quantize } : {});
      setEngineOptions({ plannedGemv: shape });
      try {
        // the planned prefill's logits, every teacher-forced step's and the seeded draws against tfjs's
        // forward over the draws (a tfjs generation per format, paid by its thread case, was ~3.5 s of
        // that case's 3.6-5.6 s on CI)
        const opts = { maxNewTokens: 12, temperature: 0.8, topK: 20, topP: 0.9, seed: 7, stopTokens: [2] };
        const got = await generationAgainstTfjs(model, prompts, opts);
        expect(got.tokens[0].length).toBe(12);
      } finally {
        setEngineOptions({ plannedGemv: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });
  }

  for (const shape of ['thread', 'split', 'tile'] as const)
    it(`LoRA on every projection (${shape} GEMV): on and off (the reference policy) both within 1e-4 of tfjs, and on differs from off`, async () => {
      const { model } = fixture('tiny-llama-f32');
      const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3 });
      setEngineOptions({ plannedGemv: shape });
      try {
        // B starts at zero (a fresh adapter is the identity): give it values so the branch shows.
        for (const a of set.adapters) a.B.assign(tf.randomNormal(a.B.shape, 0, 0.2, 'float32', 11));
        // on: the logits at every step and the seeded draws against tfjs's forward over the draws
        await generationAgainstTfjs(model, prompts, { maxNewTokens: 10, temperature: 1, seed: 3 });
        const plannedOn = await plannedForcedLogits(model, prompts, forced.slice(0, 1));
        set.enabled = false;
        const off = await againstTfjs(model, prompts, forced.slice(0, 3));
        const plannedOff = await plannedForcedLogits(model, prompts, forced.slice(0, 1));
        expect(off.steps).toBeLessThan(1e-4);
        expect(off.prefill).toBeLessThan(1e-4);
        expect(maxAbs(plannedOn[0], plannedOff[0])).toBeGreaterThan(1e-2);
      } finally {
        setEngineOptions({ plannedGemv: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    }, 300_000);

  it('f16 weights with LoRA on every projection, each GEMV layout and the tiled GEMM: on and off within 1e-4 of the tfjs f16 path, greedy draws identical', async () => {
    const { model } = fixture('tiny-llama-f32', { quantize: f16Quantizer() });
    const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3 });
    try {
      expect(model.layers[0].gate.weight.kind).toBe('f16');
      expect(model.config.numKvHeads).toBeLessThan(model.config.numHeads); // GQA
      for (const a of set.adapters) a.B.assign(tf.randomNormal(a.B.shape, 0, 0.2, 'float32', 11));
      for (const shape of ['thread', 'split', 'tile'] as const) {
        setEngineOptions({ plannedGemv: shape });
        set.enabled = false;
        const d = await againstTfjs(model, prompts, forced.slice(0, 2));
        expect(d.prefill).toBeLessThan(1e-4);
        expect(d.steps).toBeLessThan(1e-4);
        // on: the logits at every step and the greedy draws against tfjs's forward over the draws
        set.enabled = true;
        await generationAgainstTfjs(model, prompts, { maxNewTokens: 8, greedy: true });
        releaseDecodePlans(model);
      }
    } finally {
      setEngineOptions({ plannedGemv: null });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }, 600_000);

  it('a Qwen2-style model in f16 (q/k/v biases, its untied LM head in f16): prefill and teacher-forced logits within 1e-4 of tfjs', async () => {
    const model = await syntheticModel(
      {
        architectures: ['Qwen2ForCausalLM'],
        model_type: 'qwen2',
        hidden_size: 32,
        intermediate_size: 64,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        vocab_size: 64,
        rms_norm_eps: 1e-6,
        rope_theta: 10000,
        max_position_embeddings: 256,
        tie_word_embeddings: false,
        hidden_act: 'silu',
        bos_token_id: 1,
        eos_token_id: 2,
      },
      4,
      { quantize: f16Quantizer() },
    );
    try {
      expect(model.lmHead.weight.kind).toBe('f16');
      const d = await againstTfjs(model, prompts, forced.slice(0, 2));
      expect(d.prefill).toBeLessThan(1e-4);
      expect(d.steps).toBeLessThan(1e-4);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  for (const shape of ['thread', 'split'] as const)
    it(`f16 with an odd intermediate size (65: down_proj rows end in a half-empty word), ${shape} GEMV: logits within 1e-4 of tfjs`, async () => {
      const model = await syntheticModel(
        {
          architectures: ['LlamaForCausalLM'],
          model_type: 'llama',
          hidden_size: 32,
          intermediate_size: 65,
          num_hidden_layers: 2,
          num_attention_heads: 4,
          num_key_value_heads: 2,
          vocab_size: 64,
          rms_norm_eps: 1e-6,
          rope_theta: 10000,
          max_position_embeddings: 256,
          tie_word_embeddings: true,
          hidden_act: 'silu',
          bos_token_id: 1,
          eos_token_id: 2,
        },
        5,
        { quantize: f16Quantizer() },
      );
      setEngineOptions({ plannedGemv: shape });
      try {
        const d = await againstTfjs(model, prompts, forced.slice(0, 2));
        expect(d.prefill).toBeLessThan(1e-4);
        expect(d.steps).toBeLessThan(1e-4);
      } finally {
        setEngineOptions({ plannedGemv: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });

  it('split-K attention (forced) over three cache segments: a left-padded GQA batch with LoRA on, logits within 1e-4 of tfjs, greedy and seeded draws identical', async () => {
    const { model } = fixture('tiny-llama-f32');
    const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3 });
    setEngineOptions({ plannedAttention: 'splitk' });
    try {
      for (const a of set.adapters) a.B.assign(tf.randomNormal(a.B.shape, 0, 0.2, 'float32', 11));
      expect(model.config.numKvHeads).toBeLessThan(model.config.numHeads); // GQA
      expect(Math.max(...longPrompts.map((p) => p.length))).toBeGreaterThan(2 * SPLITK_SEGMENT);
      const chunk = prefillChunk(longPrompts.length);
      const slots = Math.ceil(longPrompts[0].length / chunk) * chunk;
      expect(slots - longPrompts[1].length).toBeGreaterThanOrEqual(2 * SPLITK_SEGMENT); // row 1: segments 0, 1 all pads
      expect(slots - longPrompts[2].length).toBeGreaterThanOrEqual(SPLITK_SEGMENT); // row 2: segment 0 all pads
      // the prefill walks whole (its rows fill a GPU); every decode step below is split-K.
      // The reference: one tfjs forward over the prompts and the seeded draws, teacher-forced, and the
      // CPU sampler on its logits. A tfjs generation per check instead (each a 528-slot tfjs prefill,
      // as costly as that forward) made this test 41.5 s of the last CI run's plan.e2e.ts 152 s.
      const sampling = { maxNewTokens: 12, temperature: 0.8, topK: 20, topP: 0.9, seed: 7, stopTokens: [2] };
      const got = await generate(model, longPrompts, sampling);
      const B = longPrompts.length;
      const T = got.tokens[0].length;
      const forced = Array.from({ length: T - 1 }, (_, t) => got.tokens.map((r) => r[t]));
      const ref = await tfjsPrefixLogits(model, longPrompts, forced);
      const V = model.config.vocabSize;
      const drawn = drawsFromLogits(ref, B, V, sampling, T);
      expect(got.tokens).toEqual(drawn.tokens);
      expect(got.mask).toEqual(drawn.mask);
      expect(maxAbs(got.logprobs.flat(), drawn.logprobs.flat())).toBeLessThan(1e-4);
      // the planned prefill's logits and every teacher-forced step's within 1e-4
      expect(maxAbs(await plannedPrefillLogits(model, longPrompts), ref[0])).toBeLessThan(1e-4);
      const planned = await plannedForcedLogits(model, longPrompts, forced);
      expect(Math.max(...planned.map((p, t) => maxAbs(p, ref[t + 1])))).toBeLessThan(1e-4);
      // greedy draws: the reference's argmax at every step where the greedy prefix is the seeded one
      // (the same logits; the first step of every row and, here, all 12 of row 0, whose seeded draws are its mode)
      const greedyOpts = { maxNewTokens: T, greedy: true };
      const greedy = await generate(model, longPrompts, greedyOpts);
      const argmax = drawsFromLogits(ref, B, V, greedyOpts, T);
      let checked = 0;
      for (let b = 0; b < B; b++)
        for (let t = 0; t < T && (t === 0 || greedy.tokens[b][t - 1] === got.tokens[b][t - 1]); t++, checked++) {
          expect(greedy.tokens[b][t]).toBe(argmax.tokens[b][t]);
          expect(Math.abs(greedy.logprobs[b][t] - argmax.logprobs[b][t])).toBeLessThan(1e-4);
        }
      expect(checked).toBeGreaterThan(T);
      // the plans above were the split-K ones (8 + 4 x·A dispatches per layer with LoRA on all seven)
      const d = plannedDispatches(model, longPrompts.length, 640);
      expect(d.attention).toBe('splitk');
      expect(d.perLayer).toBe(12);
    } finally {
      setEngineOptions({ plannedAttention: null });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }, 600_000);

  it('adapters a tfjs op changed just before a planned generation are the ones its prefill uses (pending tfjs work lands first)', async () => {
    const { model } = fixture('tiny-llama-f32');
    const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'v', 'down'], seed: 5 });
    try {
      for (const a of set.adapters) a.B.assign(tf.randomNormal(a.B.shape, 0, 0.2, 'float32', 4));
      await plannedPrefillLogits(model, prompts); // the plan is built here
      // a few dispatches tfjs encodes but does not submit yet (it submits every 15)
      for (const a of set.adapters) a.B.assign(tf.tidy(() => tf.mul(a.B, 3)));
      const planned = await plannedPrefillLogits(model, prompts);
      expect(maxAbs(planned, await tfjsLogits(model, prompts))).toBeLessThan(1e-4);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  for (const shape of ['thread', 'split', 'tile'] as const) {
    it(`a batch of 20 rows spans several row blocks (${shape} GEMV): teacher-forced logits within 1e-4 of tfjs`, async () => {
      const { model } = fixture('tiny-llama-f32');
      setEngineOptions({ plannedGemv: shape });
      try {
        const many = Array.from({ length: 20 }, (_, b) => [
          1,
          ...Array.from({ length: 1 + (b % 5) }, (_, t) => (13 * b + 7 * t + 3) % 64),
        ]);
        const steps = Array.from({ length: 2 }, (_, t) => many.map((_, b) => (5 * b + 9 * t + 1) % 64));
        expect(await forcedAgainstTfjs(model, many, steps)).toBeLessThan(1e-4);
      } finally {
        setEngineOptions({ plannedGemv: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    }, 300_000);
  }

  it('the prompt runs on the plan: no tfjs kernel in a planned generation, and the tfjs prefill (the A/B switch) draws the same', async () => {
    const { model } = fixture('tiny-llama-f32');
    try {
      const opts = { maxNewTokens: 6, temperature: 1, seed: 9 };
      await generate(model, prompts, opts); // warm-up: the plan is built here
      const prof = await tf.profile(async () => void (await generate(model, prompts, opts)));
      expect(prof.kernels.map((k) => k.name)).toEqual([]);
      setEngineOptions({ prefillPath: 'tfjs' });
      const viaTfjs = await generate(model, prompts, opts);
      const profTfjs = await tf.profile(async () => void (await generate(model, prompts, opts)));
      setEngineOptions({ prefillPath: 'planned' });
      expect(profTfjs.kernels.length).toBeGreaterThan(0); // the switch does take the tfjs prefill
      const planned = await generate(model, prompts, opts);
      expect(planned.tokens).toEqual(viaTfjs.tokens);
      expect(maxAbs(planned.logprobs.flat(), viaTfjs.logprobs.flat())).toBeLessThan(1e-4);
    } finally {
      setEngineOptions({ prefillPath: 'planned' });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  it('prompts over several prefill chunks (70 rows: 14-column chunks, 1 to 40 tokens): prefill and teacher-forced logits within 1e-4 of tfjs', async () => {
    const { model } = fixture('tiny-llama-f32');
    try {
      const B = 70;
      expect(prefillChunk(B)).toBe(14);
      const long = Array.from({ length: B }, (_, b) => [
        1,
        ...Array.from({ length: (b * 7) % 40 }, (_, t) => (11 * b + 5 * t + 2) % 64),
      ]);
      const steps = Array.from({ length: 2 }, (_, t) => long.map((_, b) => (3 * b + 7 * t + 4) % 64));
      const d = await againstTfjs(model, long, steps);
      expect(d.prefill).toBeLessThan(1e-4);
      expect(d.steps).toBeLessThan(1e-4);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }, 300_000);

  it('runs of 1, 3 and 8 tokens between readbacks give the same draws', async () => {
    const { model } = fixture('tiny-llama-f32');
    try {
      const opts = { maxNewTokens: 10, temperature: 1, seed: 5, stopTokens: [2, 9] };
      const runs = [];
      for (const n of [1, 3, 8]) {
        setEngineOptions({ tokensPerRun: n });
        runs.push(await generate(model, prompts, opts));
      }
      expect(runs[1]).toEqual(runs[0]);
      expect(runs[2]).toEqual(runs[0]);
    } finally {
      setEngineOptions({ tokensPerRun: 8 });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  it('holds the dispatch budget: at most 8 per layer and 6 per token besides, without LoRA; a prefill chunk the same layers', () => {
    const { model } = fixture('tiny-llama-f32');
    try {
      const d = plannedDispatches(model, 3, 32);
      expect(d.perLayer).toBeLessThanOrEqual(8);
      expect(d.draw + d.embed + d.head).toBeLessThanOrEqual(6);
      expect(d.total).toBe(d.perLayer * model.layers.length + d.draw + d.embed + d.head);
      // a prefill chunk: the same layers and the embedding of its prompt columns; the head once
      expect(d.prefill.perChunk).toBe(d.perLayer * model.layers.length + d.embed);
      expect(d.prefill.head).toBe(d.head);
      expect(d.attention).toBe('whole');
      // split-K attention: one dispatch more per layer (its combine), still inside the budget;
      // the prefill keeps the whole-cache kernel
      setEngineOptions({ plannedAttention: 'splitk' });
      const k = plannedDispatches(model, 3, 32);
      expect(k.attention).toBe('splitk');
      expect(k.perLayer).toBe(d.perLayer + 1);
      expect(k.perLayer).toBeLessThanOrEqual(8);
      expect(k.draw + k.embed + k.head).toBe(d.draw + d.embed + d.head);
      expect(k.prefill).toEqual(d.prefill);
      // the planner's own pick: split-K on the GPU layout above SPLITK_MIN_CAPACITY slots only
      setEngineOptions({ plannedAttention: null, plannedGemv: 'split' });
      expect(plannedDispatches(model, 1, SPLITK_MIN_CAPACITY).attention).toBe('whole');
      const long = plannedDispatches(model, 1, SPLITK_MIN_CAPACITY + 64);
      expect(long.attention).toBe('splitk');
      expect(long.perLayer).toBeLessThanOrEqual(8);
      setEngineOptions({ plannedGemv: 'thread' });
      expect(plannedDispatches(model, 1, SPLITK_MIN_CAPACITY + 64).attention).toBe('whole');
    } finally {
      setEngineOptions({ plannedAttention: null, plannedGemv: null });
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  });

  for (const [att, ps] of [
    [null, prompts],
    ['splitk', longPrompts],
  ] as const)
    it(`creates no GPU buffer in a planned generation after warm-up (20 steps, the prefill included; ${att ?? 'default'} attention)`, async () => {
      const { model } = fixture('tiny-llama-f32');
      setEngineOptions({ plannedAttention: att });
      const device = webgpuDevice();
      const create = device.createBuffer.bind(device);
      const run = DecodePlan.prototype.run;
      let inRun = false;
      let made = 0;
      let runs = 0;
      try {
        const opts = { maxNewTokens: 20, temperature: 1, seed: 1 };
        setEngineOptions({ tokensPerRun: 4 });
        await generate(model, ps, opts); // warm-up: the plan is built here
        device.createBuffer = (d: GPUBufferDescriptor) => {
          if (inRun) made++;
          return create(d);
        };
        let total = 0;
        const counting = device.createBuffer;
        device.createBuffer = (d: GPUBufferDescriptor) => {
          total++;
          return counting(d);
        };
        DecodePlan.prototype.run = async function (this: DecodePlan, ...args: Parameters<typeof run>) {
          inRun = true;
          runs++;
          try {
            return await run.apply(this, args);
          } finally {
            inRun = false;
          }
        };
        const r = await generate(model, ps, opts);
        expect(r.tokens[0].length).toBe(20);
        expect(runs).toBe(5);
        expect(made).toBe(0);
        expect(total).toBe(0);
      } finally {
        DecodePlan.prototype.run = run;
        device.createBuffer = create;
        setEngineOptions({ tokensPerRun: 8, plannedAttention: null });
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    });

  it(`the CLI checks a model folder through the planned path: \`lab logits --backend webgpu ${laneCliFlags.join(' ')}\` matches the golden logits`, async () => {
    const dir = resolve('dev', 'fixtures', 'tiny-llama-f32');
    const golden = JSON.parse(readFileSync(resolve(dir, 'golden.json'), 'utf8')) as Golden;
    const run = (path: string) =>
      new Promise<{ logits: number[][] }>((ok, fail) => {
        execFile(
          process.execPath,
          [
            '--import',
            'tsx',
            '--import',
            './src/cli/node/wgsl-register.mjs',
            'src/cli/lab.ts',
            'logits',
            '--model',
            dir,
            '--ids',
            golden.input_ids.join(','),
            '--backend',
            'webgpu',
            ...laneCliFlags,
            '--path',
            path,
          ],
          { maxBuffer: 1 << 26 },
          (e, stdout, stderr) => (e ? fail(new Error(`${e.message}\n${stderr}`)) : ok(JSON.parse(stdout))),
        );
      });
    const planned = await run('planned');
    expect(planned.logits.length).toBe(golden.input_ids.length);
    expect(maxAbs(planned.logits.flat(), golden.logits.flat())).toBeLessThan(1e-3);
  });

  it('a lost device fails the next run with one clear error (no hang), and the plan names why', async () => {
    // A device of its own (tfjs's stays up for the other tests) and a one-layer model on it.
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter!.requestDevice();
    const buf = (floats: number) =>
      device.createBuffer({
        size: Math.max(16, floats * 4),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
      });
    const H = 8,
      I = 16,
      V = 12,
      D = 4;
    const w = (rows: number, cols: number) => ({
      weight: { kind: 'f32' as const, rows, cols, buffer: buf(rows * cols) },
    });
    const vec = (n: number) => ({ buffer: buf(n), length: n });
    const plan = new DecodePlan(
      device,
      {
        hidden: H,
        intermediate: I,
        heads: 2,
        kvHeads: 1,
        headDim: D,
        vocab: V,
        eps: 1e-5,
        invFreq: new Float64Array([1, 0.01]),
        embed: [{ rowStart: 0, rows: V, buffer: buf(V * H) }],
        layers: [
          {
            inputNorm: vec(H),
            postNorm: vec(H),
            q: w(2 * D, H),
            k: w(D, H),
            v: w(D, H),
            o: w(H, 2 * D),
            gate: w(I, H),
            up: w(I, H),
            down: w(H, I),
          },
        ],
        norm: vec(H),
        head: [{ kind: 'f32', rows: V, cols: H, buffer: buf(V * H) }],
        lora: [{}],
      },
      { batch: 1, capacity: 8, tokensPerRun: 2 },
    );
    plan.begin({
      prefill: 1,
      basePos: [1],
      slotValid: [[1]],
      streams: [0],
      sampling: { temperature: 0, topK: 0, topP: 1, seedLo: 0, seedHi: 0 },
      loraOn: false,
    });
    const first = await plan.run(0, 2, false);
    expect(first.length).toBe(6);
    device.destroy();
    await device.lost;
    await expect(plan.run(2, 2, false)).rejects.toThrow(/GPU device was lost \(destroyed.*Saved checkpoints are kept/);
    plan.dispose();
  });

  it('left no uncaptured WebGPU error', () => {
    expect(gpuErrors).toEqual([]);
  });
});
