// Qwen3 and Gemma 3 on the planned decode (Node + Dawn on SwiftShader): the plan reads each layer of
// the block description (q/k norms per head before RoPE, head_dim x heads != hidden, q/k/v/o
// biases, Gemma's scaled embedding, four norms a layer, GeGLU, query_pre_attn_scalar, sliding
// windows with their own RoPE base, linearly scaled global layers, tied heads) and its prefill and
// teacher-forced logits stay within 1e-4 of the float64 NumPy reference of dev/fixtures/families
// and of the tfjs path, on one row and on a left-padded batch whose pads count toward the window.
// Dropping any of those features moves the logits by more than 100x the bound (families.test.ts).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useDawn } from './dawnSetup';
import { resetEngineOptions, setEngineOptions } from '../src/engine/options';
import { parseModelConfig } from '../src/contract/modelConfig';
import { parseSafetensors } from '../src/model/safetensors';
import { disposeLlama, loadLlama, type LoadOptions } from '../src/model/llama';
import {
  plannedDecodeFor,
  plannedDispatches,
  plannedForcedLogits,
  plannedPrefillLogits,
  releaseDecodePlans,
} from '../src/model/planned/decode';
import { maxAbs } from '../dev/test/maxAbs';
import { tfjsPrefixLogits } from './tfjsPrefix';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../src/model/quant';

useDawn(() => resetEngineOptions());

interface Golden {
  input_ids: number[];
  logits: number[][];
  batch: { input_ids: number[][]; attention_mask: number[][]; logits: (number[] | null)[][] };
}
const load = (name: string, opts: LoadOptions = {}) => {
  const d = resolve('dev/fixtures/families', name);
  const config = parseModelConfig(readFileSync(`${d}/config.json`, 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(`${d}/model.safetensors`)));
  return {
    model: loadLlama(config, st, opts),
    golden: JSON.parse(readFileSync(`${d}/golden.json`, 'utf8')) as Golden,
  };
};

describe.each(['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied'])('%s on the planned decode', (name) => {
  it('one row: prefill and teacher-forced logits within 1e-4 of the float64 reference and of tfjs', async () => {
    setEngineOptions({ decodePath: 'planned', prefillPath: 'planned' });
    const { model, golden } = load(name);
    try {
      expect(plannedDecodeFor(model)).not.toBeNull();
      const k = 3; // the windows (4 slots) are shorter than the 10-token prompt: steps past 4 use them
      const prompt = [golden.input_ids.slice(0, k)];
      const forced = golden.input_ids.slice(k).map((id) => [id]);
      const prefill = await plannedPrefillLogits(model, prompt);
      expect(maxAbs(prefill, golden.logits[k - 1])).toBeLessThan(1e-4);
      const planned = await plannedForcedLogits(model, prompt, forced);
      expect(Math.max(...planned.map((l, t) => maxAbs(l, golden.logits[k + t])))).toBeLessThan(1e-4);
      const ref = await tfjsPrefixLogits(model, prompt, forced);
      expect(Math.max(...planned.map((l, t) => maxAbs(l, ref[t + 1])))).toBeLessThan(1e-4);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }, 300_000);

  it('a left-padded batch: the reference logits at every real position after the prompt', async () => {
    setEngineOptions({ decodePath: 'planned', prefillPath: 'planned' });
    const { model, golden } = load(name);
    try {
      const { input_ids: ids, attention_mask: mask, logits: want } = golden.batch;
      const k = 5;
      const prompts = ids.map((r, b) => r.slice(0, k).filter((_, j) => mask[b][j] === 1));
      const forced = ids[0].slice(k).map((_, t) => ids.map((r) => r[k + t]));
      const V = model.config.vocabSize;
      const rowsOf = (l: Float32Array) => [0, 1].map((b) => l.slice(b * V, (b + 1) * V));
      const got = [await plannedPrefillLogits(model, prompts), ...(await plannedForcedLogits(model, prompts, forced))];
      const worst = Math.max(
        ...got.flatMap((l, t) => rowsOf(l).map((row, b) => maxAbs(row, want[b][k - 1 + t] as number[]))),
      );
      expect(worst).toBeLessThan(1e-4);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }, 300_000);
});

it.each([
  ['int8', int8Quantizer(), 'int8'],
  ['f16', f16Quantizer(), 'f16'],
  ['int4 (groups of 8)', int4Quantizer(8), 'int4'],
] as const)(
  '%s weights (qwen3-bias, gemma3-untied): teacher-forced planned logits within 1e-4 of tfjs on the same weights',
  async (_, quantize, kind) => {
    setEngineOptions({ decodePath: 'planned', prefillPath: 'planned' });
    for (const name of ['qwen3-bias', 'gemma3-untied']) {
      const { model, golden } = load(name, { quantize });
      try {
        expect([model.layers[0].o.weight.kind, model.lmHead.weight.kind]).toEqual([kind, kind]);
        const prompt = [golden.input_ids.slice(0, 3)];
        const forced = golden.input_ids.slice(3).map((id) => [id]);
        const planned = await plannedForcedLogits(model, prompt, forced);
        const ref = await tfjsPrefixLogits(model, prompt, forced);
        expect(Math.max(...planned.map((l, t) => maxAbs(l, ref[t + 1])))).toBeLessThan(1e-4);
      } finally {
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    }
  },
  300_000,
);

it('dispatches a layer: the Llama block 7, q/k norms +2 (Qwen3), and post-branch norms +2 more (Gemma 3)', () => {
  setEngineOptions({ decodePath: 'planned', prefillPath: 'planned', plannedAttention: 'whole' });
  for (const [name, perLayer] of [
    ['qwen3-tied', 9],
    ['gemma3-tied', 11],
  ] as const) {
    const { model } = load(name);
    try {
      expect(plannedDispatches(model, 1, 64).perLayer).toBe(perLayer);
    } finally {
      releaseDecodePlans(model);
      disposeLlama(model);
    }
  }
});

describe.each([
  { plannedGemv: 'split', plannedAttention: 'splitk' },
  { plannedGemv: 'tile', plannedAttention: 'whole' },
] as const)('the GPU layouts (%o)', (layout) => {
  it.each(['qwen3-bias', 'gemma3-untied'])(
    '%s: teacher-forced logits within 1e-4 of the float64 reference',
    async (name) => {
      setEngineOptions({ decodePath: 'planned', prefillPath: 'planned', ...layout });
      const { model, golden } = load(name);
      try {
        const prompt = [golden.input_ids.slice(0, 3)];
        const forced = golden.input_ids.slice(3).map((id) => [id]);
        const planned = await plannedForcedLogits(model, prompt, forced);
        expect(Math.max(...planned.map((l, t) => maxAbs(l, golden.logits[3 + t])))).toBeLessThan(1e-4);
      } finally {
        resetEngineOptions();
        releaseDecodePlans(model);
        disposeLlama(model);
      }
    },
    300_000,
  );
});
