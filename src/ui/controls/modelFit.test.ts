import { readFileSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../contract/modelConfig';
import { planLearnMemory } from '../../contract/learnMemory';
import {
  backendBudget,
  checkFit,
  dataPromptLength,
  dataPromptTokens,
  estimateMemory,
  loraOf,
  paramCount,
  withLearnPlan,
  workloadOf,
} from './modelFit';

const GiB = 2 ** 30;
const sandbox = parseModelConfig(readFileSync('public/models/defender/config.json', 'utf8'));

// SmolLM2-135M-Instruct's config.json (hub), whose model card gives 134,515,008 parameters.
const smol = parseModelConfig({
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  hidden_size: 576,
  intermediate_size: 1536,
  num_hidden_layers: 30,
  num_attention_heads: 9,
  num_key_value_heads: 3,
  vocab_size: 49152,
  max_position_embeddings: 8192,
  tie_word_embeddings: true,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  hidden_act: 'silu',
});

describe('model memory estimate', () => {
  it('counts the sandbox defender as its safetensors file holds it (f32 bytes = file size - header)', () => {
    // 8-byte length + JSON header + data: the data is 4 bytes per parameter.
    const buf = readFileSync('public/models/defender/model.safetensors');
    const header = Number(buf.readBigUInt64LE(0));
    const dataBytes = statSync('public/models/defender/model.safetensors').size - 8 - header;
    expect(paramCount(sandbox)).toBe(dataBytes / 4);
    expect(paramCount(sandbox)).toBe(464_544);
  });

  it('counts SmolLM2-135M as its model card does', () => {
    expect(paramCount(smol)).toBe(134_515_008);
    // Untied: the lm_head adds vocab x hidden.
    expect(paramCount({ ...smol, tieWordEmbeddings: false })).toBe(134_515_008 + 49152 * 576);
  });

  it('sizes the KV cache and activations from the shapes', () => {
    const e = estimateMemory(sandbox, { batch: 8, seqLen: 100 });
    // K and V: 2 x 3 layers x 2 kv heads x 24 dims x 800 tokens x 4 bytes.
    expect(e.kvCacheBytes).toBe(2 * 3 * 2 * 24 * 800 * 4);
    // Per token and layer: 7*96 + 3*96 + 3*48 + 4*384 + 2*4*100 = 3440; logits: 3*512; x 800 tokens x 4 bytes.
    expect(e.activationBytes).toBe((3 * 3440 + 1536) * 800 * 4);
    // The embedding (512 x 96) is larger than any projection (96 x 384).
    expect(e.largestTensorBytes).toBe(512 * 96 * 4);
    expect(e.totalBytes).toBe(464_544 * 4 + e.kvCacheBytes + e.activationBytes);
  });

  it("sizes the weights in the recipe's weight format (worked by hand for the sandbox defender in int4-g32)", () => {
    // Per layer, int4-g32: words (out x in/8 x 4 B) + scales (out x in/32 x 4 B).
    // q [96, 96]: 4608 + 1152; k, v [48, 96]: 2304 + 576 each; o [96, 96]: 5760;
    // gate, up [384, 96]: 18432 + 4608 each; down [96, 384]: 18432 + 4608. Sum 86400, x 3 layers.
    // Dense float32: embedding 512 x 96 + 2 norms x 96 x 3 layers + final norm 96 = 49824 params.
    const e = estimateMemory(sandbox, { batch: 1, seqLen: 16 }, 'int4-g32');
    expect(e.weightBytes).toBe(3 * 86_400 + 49_824 * 4);
    // The embedding stays float32 and is still the largest tensor.
    expect(e.largestTensorBytes).toBe(512 * 96 * 4);
    expect(estimateMemory(sandbox, { batch: 1, seqLen: 16 }, 'f32').weightBytes).toBe(464_544 * 4);
    // f16: 2 B per weight + a unit float32 scale per output row. Per layer 138,240 weights x 2 B
    // + (96 + 48 + 48 + 96 + 384 + 384 + 96) rows x 4 B = 276,480 + 4,608 = 281,088, x 3 layers.
    expect(estimateMemory(sandbox, { batch: 1, seqLen: 16 }, 'f16').weightBytes).toBe(3 * 281_088 + 49_824 * 4);
    // SmolLM2-135M's projections: 4 B per weight in f32, 0.5 + 4/32 = 0.625 B in int4-g32 (6.4x
    // smaller); the f32 embedding (108 MiB) and the norms stay.
    const smolInt4 = estimateMemory(smol, { batch: 1, seqLen: 16 }, 'int4-g32').weightBytes;
    const embed = 49152 * 576 * 4;
    expect(
      (smol.numLayers * (576 * 576 + 2 * 576 * 192 + 576 * 576 + 3 * 576 * 1536) * 4) /
        (smolInt4 - embed - 576 * 61 * 4),
    ).toBeCloseTo(6.4, 9);
  });
});

describe('fit check', () => {
  const smolEstimate = estimateMemory(smol, { batch: 4, seqLen: 128 });

  it('passes SmolLM2-135M on a GPU with room', () => {
    const v = checkFit(smolEstimate, {
      backend: 'webgpu',
      maxBufferSize: 2 * GiB,
      maxStorageBufferBindingSize: GiB,
      budgetBytes: 4 * GiB,
      budgetSource: 'test',
      inUseBytes: 0,
    });
    expect(v).toMatchObject({ fits: true, problems: [], notes: [] });
  });

  it('refuses a largest tensor over maxBufferSize, and notes one over the binding size', () => {
    // Embedding 49152 x 576 x 4 = 108 MiB against a 100 MiB / 64 MiB adapter.
    const v = checkFit(smolEstimate, {
      backend: 'webgpu',
      maxBufferSize: 100 * 2 ** 20,
      maxStorageBufferBindingSize: 64 * 2 ** 20,
      budgetBytes: 8 * GiB,
      budgetSource: 'test',
      inUseBytes: 0,
    });
    expect(v.fits).toBe(false);
    expect(v.problems[0]).toMatch(/108\.0 MiB, over this GPU's maxBufferSize of 100\.0 MiB/);
    expect(v.notes[0]).toMatch(/maxStorageBufferBindingSize \(64\.0 MiB\)/);
  });

  it('counts what tfjs already holds against the budget', () => {
    // A 7B-class shape: 32 layers, 4096 wide, 11008 MLP, 32000 vocab, untied = 6,738,415,616 params = 25.1 GiB of f32.
    const llama7b = {
      ...smol,
      hiddenSize: 4096,
      intermediateSize: 11008,
      numLayers: 32,
      numHeads: 32,
      numKvHeads: 32,
      headDim: 128,
      vocabSize: 32000,
      tieWordEmbeddings: false,
    };
    expect(paramCount(llama7b)).toBe(6_738_415_616);
    const big = checkFit(estimateMemory(llama7b, { batch: 1, seqLen: 64 }), {
      backend: 'wasm',
      budgetBytes: 4 * GiB,
      budgetSource: 'test',
      inUseBytes: 0,
    });
    expect(big.fits).toBe(false);
    expect(big.problems[0]).toMatch(/weights 25\.10 GiB/);
    const e = estimateMemory(sandbox, { batch: 8, seqLen: 100 });
    expect(checkFit(e, { backend: 'cpu', budgetBytes: e.totalBytes, budgetSource: 'test', inUseBytes: 0 }).fits).toBe(
      true,
    );
    const tight = checkFit(e, { backend: 'cpu', budgetBytes: e.totalBytes, budgetSource: 'test', inUseBytes: 1 });
    expect(tight).toMatchObject({ fits: false, headroomBytes: -1 });
  });

  it('budgets each backend from what the browser reports', () => {
    expect(backendBudget('wasm', { deviceMemoryGiB: 8 }).bytes).toBe(4 * GiB);
    expect(backendBudget('webgpu', { deviceMemoryGiB: 8 }).bytes).toBe(4 * GiB);
    expect(backendBudget('webgpu', { deviceMemoryGiB: 2 }).bytes).toBe(GiB);
    expect(backendBudget('cpu', { jsHeapLimit: 3e9 }).bytes).toBe(3e9);
    expect(backendBudget('webgpu', {}).source).toMatch(/assumed 4 GiB/);
  });

  it('reads the rollout shape from a recipe config', () => {
    expect(workloadOf({ prompts: 4, groupSize: 8, maxNewTokens: 40 })).toEqual({
      batch: 32,
      seqLen: 168,
      promptLen: 128,
      responseLen: 40,
    });
    expect(workloadOf({ goals: '2', groupSize: '4', attackerMaxTokens: '40', defenderMaxTokens: '32' })).toEqual({
      batch: 8,
      seqLen: 168,
      promptLen: 128,
      responseLen: 40,
    });
    expect(workloadOf({})).toEqual({ batch: 1, seqLen: 192, promptLen: 128, responseLen: 64 });
  });
});

describe('fit check with the learn-memory planner (in place of the activation heuristic)', () => {
  const gpu = (budgetBytes: number) => ({
    backend: 'webgpu',
    maxBufferSize: 2 * GiB,
    maxStorageBufferBindingSize: GiB,
    budgetBytes,
    budgetSource: 'test',
    inUseBytes: 100 * 2 ** 20,
  });

  it('reads the trained LoRA from a recipe config', () => {
    expect(loraOf({ loraRank: 16, loraTargets: 'mlp' })).toEqual({ r: 16, targets: ['gate', 'up', 'down'] });
    expect(loraOf({ loraRank: '8' })).toEqual({ r: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] });
    expect(loraOf({})).toBeNull();
    // LoRA dropout: the planned step keeps a mask per adapter, which the planner counts.
    expect(loraOf({ loraRank: 8, loraTargets: 'attn', loraDropout: 0.05 })).toMatchObject({ r: 8, dropout: true });
    expect(loraOf({ loraRank: 8, loraDropout: 0 })).not.toHaveProperty('dropout');
  });

  it('SmolLM2-135M, 64 rows of 128 + 64 tokens on a 2 GiB budget: the heuristic refuses it, the planner fits it in micro-batches', () => {
    const w = workloadOf({ prompts: 8, groupSize: 8, maxNewTokens: 64 });
    const budget = gpu(2 * GiB);
    const heuristic = estimateMemory(smol, w, 'int4-g32');
    expect(checkFit(heuristic, budget).fits).toBe(false);
    const lora = { r: 16, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as const };
    const e = withLearnPlan(heuristic, smol, w, 'int4-g32', { ...lora, targets: [...lora.targets] }, budget);
    const v = checkFit(e, budget);
    expect(v).toMatchObject({ fits: true, problems: [] });
    // The planner gets what is left after tfjs's bytes and the rollout's KV cache.
    const plan = planLearnMemory(
      smol,
      'int4-g32',
      { ...lora, targets: [...lora.targets] },
      { rows: 64, promptLen: 128, responseLen: 64 },
      {
        maxBufferSize: 2 * GiB,
        maxStorageBufferBindingSize: GiB,
        budgetBytes: 2 * GiB - 100 * 2 ** 20 - e.kvCacheBytes,
      },
    );
    expect(e.learn).toEqual(plan);
    expect(e.activationBytes).toBe(plan.bytesByScope['micro-batch']);
    expect(e.optimizerBytes).toBe(plan.bytesByScope.optimizer);
    expect(e.totalBytes).toBe(plan.peakBytes + e.kvCacheBytes);
    expect(e.learn!.accumulationSteps * e.learn!.microBatchRows).toBeGreaterThanOrEqual(64);
    expect(e.totalBytes).toBeLessThan(heuristic.totalBytes);
  });

  it('the same batch: the planner recomputes activations when keeping them would take more micro-batches, and says so', () => {
    const w = workloadOf({ prompts: 8, groupSize: 8, maxNewTokens: 64 });
    const budget = gpu(2 * GiB);
    const lora = {
      r: 16,
      targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as ('q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down')[],
    };
    const e = withLearnPlan(estimateMemory(smol, w, 'int4-g32'), smol, w, 'int4-g32', lora, budget);
    const kept = planLearnMemory(
      smol,
      'int4-g32',
      lora,
      { rows: 64, promptLen: 128, responseLen: 64 },
      {
        maxBufferSize: 2 * GiB,
        maxStorageBufferBindingSize: GiB,
        budgetBytes: 2 * GiB - 100 * 2 ** 20 - e.kvCacheBytes,
        planBudgetBytes: 2 ** 31,
      },
      false,
    );
    // Kept: 16 micro-batches of 4 rows; each layer's input kept and the rest rebuilt: 4 of 20.
    expect([kept.accumulationSteps, kept.microBatchRows]).toEqual([16, 4]);
    expect(e.learn).toMatchObject({ recompute: true, accumulationSteps: 4, microBatchRows: 20, fits: true });
    expect(e.learn!.notes.join(' ')).toMatch(
      /recomputes the layer's other activations in the backward .*keeping them all would need 16 micro-batches of 4 rows, not 4 of 20/,
    );
  });

  it('too big even at one row: the verdict names LoRA and AdamW among the bytes', () => {
    const w = workloadOf({ prompts: 1, groupSize: 1, maxNewTokens: 64 });
    const e = withLearnPlan(
      estimateMemory(smol, w, 'f32'),
      smol,
      w,
      'f32',
      { r: 16, targets: ['q'] },
      gpu(600 * 2 ** 20),
    );
    const v = checkFit(e, gpu(600 * 2 ** 20));
    expect(v.fits).toBe(false);
    expect(v.problems.join(' ')).toMatch(/\+ LoRA and AdamW [\d.]+ MiB \+ activations/);
  });
});

describe('model memory estimate of the Qwen3 and Gemma 3 families', () => {
  it('counts each family fixture as its safetensors file holds it (q/k norms, four norms, tied or not)', () => {
    for (const c of ['qwen3-bias', 'qwen3-tied', 'gemma3-tied', 'gemma3-untied']) {
      const dir = `dev/fixtures/families/${c}`;
      const buf = readFileSync(`${dir}/model.safetensors`);
      const dataBytes = statSync(`${dir}/model.safetensors`).size - 8 - Number(buf.readBigUInt64LE(0));
      expect(paramCount(parseModelConfig(readFileSync(`${dir}/config.json`, 'utf8')))).toBe(dataBytes / 4);
    }
  });

  it('counts Qwen3-0.6B and gemma-3-1b as their published safetensors totals (596,049,920 and 999,885,952)', () => {
    const qwen3 = parseModelConfig({
      architectures: ['Qwen3ForCausalLM'],
      hidden_size: 1024,
      head_dim: 128,
      intermediate_size: 3072,
      num_attention_heads: 16,
      num_key_value_heads: 8,
      num_hidden_layers: 28,
      vocab_size: 151936,
      tie_word_embeddings: true,
    });
    expect(paramCount(qwen3)).toBe(596_049_920);
    const gemma = parseModelConfig({
      architectures: ['Gemma3ForCausalLM'],
      hidden_size: 1152,
      head_dim: 256,
      intermediate_size: 6912,
      num_attention_heads: 4,
      num_key_value_heads: 1,
      num_hidden_layers: 26,
      vocab_size: 262144,
    });
    expect(paramCount(gemma)).toBe(999_885_952);
  });
});

describe('activation estimate of the new blocks (tfjs learns them in one pass)', () => {
  it("counts Gemma 3's two post-branch norm outputs and the q/k norm outputs per token and layer", () => {
    const gemma = parseModelConfig(readFileSync('dev/fixtures/families/gemma3-tied/config.json', 'utf8'));
    const w = { batch: 2, seqLen: 16 };
    const asLlama = estimateMemory({ ...gemma, family: 'llama' }, w).activationBytes;
    const extra = (2 * gemma.hiddenSize + (gemma.numHeads + gemma.numKvHeads) * gemma.headDim) * gemma.numLayers;
    expect(estimateMemory(gemma, w).activationBytes - asLlama).toBe(extra * w.batch * w.seqLen * 4);
  });
});

describe("the fit check counts the data's real prompt lengths (issue 40)", () => {
  it("an upload's longest prompt sets the prompt length: 100,000 characters are ~33,366 tokens, not 128", () => {
    const uploads = [
      { ref: 'upload:four.jsonl', longestPrompt: 100_001 },
      { ref: 'upload:short.jsonl', longestPrompt: 30 },
      { ref: 'upload:old.jsonl' },
    ];
    const d = dataPromptTokens({ dataset: 'upload:four.jsonl', groupSize: 2 }, uploads)!;
    // ceil(100001 / 3) + 32 template tokens
    expect(d).toEqual({ tokens: 33_334 + 32, chars: 100_001, ref: 'upload:four.jsonl' });
    expect(workloadOf({ prompts: 4, groupSize: 2, maxNewTokens: 64 }, d.tokens)).toEqual({
      batch: 8,
      seqLen: 33_366 + 64,
      promptLen: 33_366,
      responseLen: 64,
    });
    // Short prompts keep the 128-token floor; an upload recorded before the count, or none, changes nothing.
    expect(
      workloadOf({ maxNewTokens: 64 }, dataPromptTokens({ dataset: 'upload:short.jsonl' }, uploads)!.tokens).promptLen,
    ).toBe(128);
    expect(dataPromptTokens({ dataset: 'upload:old.jsonl' }, uploads)).toBeNull();
    expect(dataPromptTokens({ dataset: 'sandbox' }, uploads)).toBeNull();
  });

  it("uses the worker's count with the model's tokenizer when it came back, and says which it used", () => {
    const estimate = { tokens: 132, chars: 300, ref: 'upload:mix.jsonl' };
    const counted = dataPromptLength(estimate, {
      tokens: 611,
      line: 2,
      counted: 3,
      rows: 3,
      tokenizer: '/models/defender/',
    });
    expect(counted.tokens).toBe(611);
    expect(counted.how).toBe(
      "prompt length: counted with the model's tokenizer and chat template (/models/defender/): the longest prompt of upload:mix.jsonl is 611 tokens (line 2; the 3 longest of 3 prompts counted)",
    );
    const guessed = dataPromptLength(estimate, { error: 'it did not load within 10 s' });
    expect(guessed.tokens).toBe(132);
    expect(guessed.how).toBe(
      'prompt length: estimated at 3 characters a token plus 32 for the template (300 characters, about 132 tokens): the tokenizer was not used (it did not load within 10 s)',
    );
    expect(workloadOf({ maxNewTokens: 64 }, counted.tokens).promptLen).toBe(611);
    // A rollout that cuts to its prompt budget never sends more than the budget.
    expect(workloadOf({ maxNewTokens: 64, maxPromptLength: 200, truncation: 'left' }, 611).promptLen).toBe(200);
    expect(workloadOf({ maxNewTokens: 64, maxPromptLength: 200, truncation: 'error' }, 611).promptLen).toBe(611);
  });
});
