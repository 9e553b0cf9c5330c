import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../../src/cli/fs-source';
import { ChatTemplate } from '../../src/model/chat';
import { disposeLlama, forward } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { mulberry32 } from '../../src/model/random';
import { createTokenizer, loadTokenizer } from '../../src/model/tokenizer';
import { bpeTokenizerConfig, bpeTokenizerJson, trainBpe } from './bpeTrainer';
import { useTrainingBackend } from '../../src/cli/nodeBackend';
import { defenderSft, judgeData } from '../../src/data/sandbox/datasets';
import {
  buildSandboxModels,
  encodeChatSft,
  encodeGuardSft,
  GUARD_CHAT_TEMPLATE,
  guardMessages,
  makeBatches,
  QUICK_BUDGETS,
  QUICK_SPEC,
  renderGuardPrompt,
  sandboxTokenizerLines,
  singleTokenId,
} from './train';

const bpe = trainBpe(sandboxTokenizerLines(3, 600), { vocabSize: 512 });
const tok = createTokenizer(bpeTokenizerJson(bpe), bpeTokenizerConfig(bpe));

describe('training examples', () => {
  it('puts the loss on the assistant replies and their <|im_end|> only', () => {
    const ex = defenderSft(40, 5).find((e) => e.messages.length === 6)!;
    const enc = encodeChatSft(tok, ex.messages);
    const targets = enc.ids.filter((_, i) => enc.target[i] === 1);
    const want = ex.messages
      .filter((m) => m.role === 'assistant')
      .map((m) => `${m.content}<|im_end|>`)
      .join('');
    expect(tok.decode(targets)).toBe(want);
    expect(enc.target[0]).toBe(0);
  });

  it('guard examples end with the verdict; the template renders what training sees', () => {
    const j = judgeData(30, 5).find((e) => e.unsafe === 1 && Array.isArray(e.prompt))!;
    const enc = encodeGuardSft(tok, j.prompt, j.response, true, j.category);
    expect(tok.decode(enc.ids.filter((_, i) => enc.target[i] === 1))).toBe(`unsafe\n${j.category}<|im_end|>`);
    const msgs = guardMessages(j.prompt, j.response);
    const rendered = new ChatTemplate(GUARD_CHAT_TEMPLATE).render(msgs as never);
    expect(rendered).toBe(renderGuardPrompt(msgs));
    expect(rendered.endsWith('<|im_start|>assistant\n')).toBe(true);
    expect(() => singleTokenId(tok, 'unsafe')).not.toThrow();
    expect(() => singleTokenId(tok, 'safe')).not.toThrow();
  });
});

describe('makeBatches', () => {
  // 512 examples = one pool of 32 batches of 16: a 10-token prompt, then a 3-token reply for
  // label 0 (even index) and a 5-token one for label 1 (odd), as CORRECT / INCORRECT differ.
  const examples = Array.from({ length: 512 }, (_, i) => {
    const reply = i % 2 === 0 ? 3 : 5;
    return {
      ids: Array.from({ length: 10 + reply }, (_, j) => (j === 0 ? i : 7)),
      target: Uint8Array.from({ length: 10 + reply }, (_, j) => (j >= 10 ? 1 : 0)),
    };
  });
  const labelOnes = (b: { ids: number[] }[]) => b.filter((e) => e.ids[0] % 2 === 1).length;

  it("'length' groups replies of one length: every batch holds one label", () => {
    const batches = makeBatches(examples, 16, mulberry32(1), 'length');
    expect(batches).toHaveLength(32);
    expect(batches.map(labelOnes).sort((a, b) => a - b)).toEqual([...Array(16).fill(0), ...Array(16).fill(16)]);
  });

  it("'prompt' buckets by the prompt only: equal prompts keep index order, 8 of each label per batch", () => {
    const batches = makeBatches(examples, 16, mulberry32(1), 'prompt');
    expect(batches).toHaveLength(32);
    expect(batches.map(labelOnes)).toEqual(Array(32).fill(8));
    expect(new Set(batches.flat().map((e) => e.ids[0])).size).toBe(512);
  });

  it("'prompt' sorts by the tokens before the first target", () => {
    // prompts of 4..7 tokens (i % 4 + 4), replies of 12 - prompt tokens: every whole length is 12
    const mixed = Array.from({ length: 64 }, (_, i) => {
      const p = (i % 4) + 4;
      return {
        ids: Array.from({ length: 12 }, () => i),
        target: Uint8Array.from({ length: 12 }, (_, j) => (j >= p ? 1 : 0)),
      };
    });
    for (const b of makeBatches(mixed, 16, mulberry32(2), 'prompt'))
      expect(new Set(b.map((e) => e.ids[0] % 4)).size).toBe(1);
  });
});

describe('buildSandboxModels (quick budget)', () => {
  // Training runs on tfjs wasm as the build does (the cpu backend is ~10x slower at it); this
  // file runs in its own fork, and the cpu backend is restored afterwards.
  beforeAll(async () => {
    expect(await useTrainingBackend('wasm')).toBe('wasm');
  });
  afterAll(async () => {
    await tf.setBackend('cpu');
  });

  it('is deterministic for a seed', async () => {
    const opts = {
      seed: 9,
      spec: QUICK_SPEC,
      budgets: QUICK_BUDGETS,
      only: ['attacker'] as const,
      tokenizerCorpus: 300,
    };
    const a = await buildSandboxModels(opts);
    const b = await buildSandboxModels(opts);
    expect(a.models[0].files.get('model.safetensors')).toEqual(b.models[0].files.get('model.safetensors'));
    expect(a.models[0].result.lastLoss).toBe(b.models[0].result.lastLoss);
    expect(a.models[0].reloadMaxDiff).toBeLessThan(1e-3);
  });

  it("qa trains its drill phase first; drills are the qa model's only", async () => {
    const opts = { seed: 9, spec: QUICK_SPEC, only: ['qa'] as const, tokenizerCorpus: 300 };
    const withDrills = await buildSandboxModels({ ...opts, budgets: QUICK_BUDGETS });
    const without = await buildSandboxModels({ ...opts, budgets: { qa: { ...QUICK_BUDGETS.qa, drillSteps: 0 } } });
    expect(withDrills.models[0].drill?.steps).toBe(QUICK_BUDGETS.qa.drillSteps);
    expect(without.models[0].drill).toBeUndefined();
    expect(withDrills.models[0].result.steps).toBe(QUICK_BUDGETS.qa.steps);
    // Same init, same main data and order: only the drill steps make the weights differ.
    expect(withDrills.models[0].files.get('model.safetensors')).not.toEqual(
      without.models[0].files.get('model.safetensors'),
    );
    await expect(
      buildSandboxModels({ ...opts, only: ['judge'], budgets: { judge: { ...QUICK_BUDGETS.judge, drillSteps: 2 } } }),
    ).rejects.toThrow(/only the qa model has drills, not judge/);
  });

  it('qa ends with its critic and soft blind spot phases; qaFrom / qaCriticFrom start from given weights and run the phases after', async () => {
    const opts = { seed: 9, spec: QUICK_SPEC, only: ['qa'] as const, tokenizerCorpus: 300 };
    const noCritic = { qa: { ...QUICK_BUDGETS.qa, criticSteps: 0, softSteps: 0 } };
    const first = (await buildSandboxModels({ ...opts, budgets: noCritic })).models[0];
    expect(first.critic).toBeUndefined();
    const weights = first.files.get('model.safetensors') as Uint8Array;
    // From the weights with no critic step, the folder holds those weights byte for byte.
    const same = (await buildSandboxModels({ ...opts, budgets: noCritic, qaFrom: weights })).models[0];
    expect(same.result.steps).toBe(0);
    expect(same.drill).toBeUndefined();
    expect(same.files.get('model.safetensors')).toEqual(weights);
    // The whole build and the build from its first two phases give the same model.
    const whole = (await buildSandboxModels({ ...opts, budgets: QUICK_BUDGETS })).models[0];
    const resumed = (await buildSandboxModels({ ...opts, budgets: QUICK_BUDGETS, qaFrom: weights })).models[0];
    expect(whole.critic?.steps).toBe(QUICK_BUDGETS.qa.criticSteps);
    expect(resumed.critic?.steps).toBe(QUICK_BUDGETS.qa.criticSteps);
    expect(whole.files.get('model.safetensors')).not.toEqual(weights);
    expect(resumed.files.get('model.safetensors')).toEqual(whole.files.get('model.safetensors'));
    // The folder says which phases it holds (first: none written, it has no critic phase).
    expect(first.files.has('sandbox_build.json')).toBe(false);
    const phases = (m: typeof whole) => JSON.parse(m.files.get('sandbox_build.json') as string).phases;
    expect(phases(whole)).toEqual({ drills: 2, main: 3, critic: 2, soft: 2 });
    expect(phases(resumed)).toEqual({ drills: 'given', main: 'given', critic: 2, soft: 2 });
    // The soft blind spot phase from a model of the first three phases (qaCriticFrom): the same model.
    const three = (await buildSandboxModels({ ...opts, budgets: { qa: { ...QUICK_BUDGETS.qa, softSteps: 0 } } }))
      .models[0];
    expect(three.soft).toBeUndefined();
    expect(phases(three)).toEqual({ drills: 2, main: 3, critic: 2 });
    const softened = (
      await buildSandboxModels({
        ...opts,
        budgets: QUICK_BUDGETS,
        qaCriticFrom: three.files.get('model.safetensors') as Uint8Array,
      })
    ).models[0];
    expect(softened.critic).toBeUndefined();
    expect(softened.files.get('model.safetensors')).toEqual(whole.files.get('model.safetensors'));
    expect(phases(softened)).toEqual({ drills: 'given', main: 'given', critic: 'given', soft: 2 });
    await expect(
      buildSandboxModels({ ...opts, only: ['judge'], budgets: { judge: { ...QUICK_BUDGETS.judge, criticSteps: 2 } } }),
    ).rejects.toThrow(/only the qa model has a critic phase, not judge/);
  });

  it('npm run build:sandbox -- --quick writes four loadable HF folders (temp dir)', async () => {
    const out = mkdtempSync(join(tmpdir(), 'sandbox-build-'));
    try {
      const t0 = Date.now();
      const log = execFileSync(
        join('node_modules', '.bin', 'tsx'),
        ['--import', './src/cli/node/wgsl-register.mjs', 'dev/sandbox/build-sandbox.ts', '--quick', '--out', out],
        {
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(Date.now() - t0).toBeLessThan(50_000); // a few seconds alone; 32 s measured with three builds sharing 2 cores
      expect(log).toMatch(/wrote 4 folders/);
      for (const name of ['defender', 'attacker', 'judge', 'qa']) {
        const dir = join(out, name);
        for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'])
          expect(existsSync(join(dir, f))).toBe(true);
        const src = folderSource(dir);
        const model = await loadModel(src);
        const t = await loadTokenizer({
          ...src,
          getJson: async (n: string) => JSON.parse(await src.getText(n)),
        } as never);
        expect(model.config.vocabSize).toBe(t.vocabSize);
        expect(model.config.tieWordEmbeddings).toBe(true);
        const logits = forward(model, [t.encode('What is 7 + 5?')]);
        expect(logits.shape).toEqual([1, t.encode('What is 7 + 5?').length, t.vocabSize]);
        logits.dispose();
        disposeLlama(model);
        const cfg = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));
        expect(cfg.chat_template).toContain('<|im_start|>');
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('npm run build:sandbox rejects an unknown --batching before training', () => {
    const run = () =>
      execFileSync(
        join('node_modules', '.bin', 'tsx'),
        [
          '--import',
          './src/cli/node/wgsl-register.mjs',
          'dev/sandbox/build-sandbox.ts',
          '--quick',
          '--batching',
          'random',
          '--out',
          '/nonexistent',
        ],
        {
          encoding: 'utf8',
          stdio: 'pipe',
          timeout: 60_000,
        },
      );
    expect(run).toThrow(/--batching must be length or prompt, got random/);
  });
});
