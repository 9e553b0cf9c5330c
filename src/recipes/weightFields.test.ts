import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseRecipeArgs, recipeInput } from '../cli/recipe-run';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { SafetensorsFile } from '../model/safetensors';
import { exportMergedModel } from '../storage/merge';
import { checkpointToJson } from './kit/checkpointFile';
import { createRun, getRecipe, listRecipes } from './registry';
import { validateConfig } from '../contract/schema';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';
import type { LoadedModel, LoadModelRefOptions, RecipeCheckpoint } from './kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const MODEL_FIELDS = ['attacker', 'defender', 'policy', 'monitor'];

function recordingEnv() {
  const loaded: { ref: string; weights: string | undefined; kind: string }[] = [];
  const env = nodeRecipeEnv({
    modelsDir: resolve(FIXTURE, '..'),
    judges: { letters: letterJudge },
    load: async (folder, ref, o?: LoadModelRefOptions): Promise<LoadedModel> => {
      const m = await loadWithCharCodec(folder, ref, o);
      loaded.push({ ref, weights: o?.weights, kind: m.model.layers[0].q.weight.kind });
      return m;
    },
  });
  return { env, loaded };
}

describe('weight format fields', () => {
  it('every model field of every recipe has a <field>Weights field with the formats, default f32', () => {
    for (const r of listRecipes()) {
      const models = Object.keys(r.schema).filter((k) => MODEL_FIELDS.includes(k));
      expect(models.length, r.name).toBeGreaterThan(0);
      for (const m of models) {
        const f = r.schema[`${m}Weights`];
        expect(f, `${r.name}.${m}Weights`).toMatchObject({
          type: 'enum',
          default: 'f32',
          options: ['f32', 'f16', 'int8', 'int4-g32', 'int4-g64', 'int4-g128'],
        });
      }
    }
  });

  it("the CLI takes a format by --set on the model field's weights field, and names the field on a bad one", () => {
    const input = recipeInput(
      parseRecipeArgs(['--recipe', 'redteam', '--model', 'tiny-llama-f32', '--set', 'defenderWeights=int4-g32']),
    );
    const ok = validateConfig(getRecipe('redteam').schema, input);
    expect(ok.ok).toBe(true);
    expect(ok.config.defenderWeights).toBe('int4-g32');
    expect(validateConfig(getRecipe('redteam').schema, { defenderWeights: 'f16' }).ok).toBe(true);
    const bad = validateConfig(getRecipe('redteam').schema, { defenderWeights: 'bf16' });
    expect(bad.errors.defenderWeights).toBe(
      'field "defenderWeights" must be one of f32, f16, int8, int4-g32, int4-g64, int4-g128, got "bf16"',
    );
  });

  it('each recipe loads each model in the format its field names', async () => {
    const pairs = [
      ['int4-g32', 'int8'],
      ['f16', 'int8'],
      ['int4-g32', 'f16'],
    ];
    for (const [r, name] of [
      'redteam',
      'attack',
      'arena',
      'defend',
      'attacker-sft',
      'tokenbuncher',
      'minmax',
      'rlhf',
      'multiturn',
    ].entries()) {
      const { env, loaded } = recordingEnv();
      const recipe = getRecipe(name);
      const models = Object.keys(recipe.schema).filter((k) => MODEL_FIELDS.includes(k));
      const formats = pairs[r % 3];
      const input: Record<string, unknown> = name === 'multiturn' ? { followUps: 'attacker' } : {};
      models.forEach((m, i) => {
        input[m] = 'tiny-llama-f32';
        input[`${m}Weights`] = formats[i];
      });
      const { run } = await createRun(env, name, input, 1);
      run.dispose();
      const want = models.map((_, i) => ({ weights: formats[i], kind: formats[i].slice(0, 4) }));
      expect(
        loaded
          .slice(0, models.length)
          .map(({ weights, kind }) => ({ weights, kind }))
          .sort((a, b) => a.weights!.localeCompare(b.weights!)),
        name,
      ).toEqual(want.sort((a, b) => a.weights.localeCompare(b.weights)));
    }
  });

  it('a checkpoint restores only into a run loading the base in the same format (an old one counts as f32)', async () => {
    const { env } = recordingEnv();
    const cfg = {
      defender: 'tiny-llama-f32',
      judge: 'letters',
      prompts: 2,
      groupSize: 2,
      maxNewTokens: 4,
      promptPool: 4,
      samples: 1,
    };
    const a = await createRun(env, 'redteam', { ...cfg, defenderWeights: 'int4-g32' }, 3);
    let payload: RecipeCheckpoint;
    try {
      payload = await a.run.state();
    } finally {
      a.run.dispose();
    }
    expect(payload.config.defenderWeights).toBe('int4-g32');
    const f32 = await createRun(env, 'redteam', cfg, 3);
    try {
      await expect(f32.run.restore(payload)).rejects.toThrow(
        'checkpoint: the defender model was "int4-g32" when saved (field "defenderWeights"), this run loads it as "f32"',
      );
      const { defenderWeights: _, ...old } = payload.config;
      await expect(f32.run.restore({ ...payload, config: old })).resolves.toBeUndefined();
    } finally {
      f32.run.dispose();
    }
    const q = await createRun(env, 'redteam', { ...cfg, defenderWeights: 'int4-g32' }, 3);
    try {
      await q.run.restore(payload);
      expect(q.run.stepsDone).toBe(0);
      const { defenderWeights: _, ...old } = payload.config;
      await expect(q.run.restore({ ...payload, config: old })).rejects.toThrow(/was "f32" when saved/);
    } finally {
      q.run.dispose();
    }
  });

  it('defend refuses an attacker checkpoint trained on a base in another format', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'byo-'));
    const file = join(dir, 'attack.json');
    const payload: RecipeCheckpoint = {
      format: 1,
      recipe: 'attack',
      seed: 0,
      step: 1,
      config: { attacker: 'tiny-llama-f32', attackerWeights: 'int8', loraRank: 2, loraAlpha: 4 },
      tensors: [],
      optimizer: { state: { step: 0 }, tensors: [] },
      rng: {},
      extra: {},
    };
    writeFileSync(file, checkpointToJson(payload));
    const { env, loaded } = recordingEnv();
    const cfg = { attacker: 'tiny-llama-f32', defender: 'tiny-llama-f32', attackerCheckpoint: file, judge: 'letters' };
    await expect(createRun(env, 'defend', cfg, 0)).rejects.toThrow(
      `${file}: the attacker model was "int8" when saved (field "attackerWeights"), this run loads it as "f32"`,
    );
    expect(loaded.every((l) => l.ref !== 'tiny-llama-f32' || l.weights !== 'f32')).toBe(true);
  });

  it('a merged export of a quantised base says so in its header; an f32 one records f32', () => {
    const base = new SafetensorsFile(new Uint8Array(readFileSync(join(FIXTURE, 'model.safetensors'))), 'fixture');
    const dims = { hiddenSize: 32, intermediateSize: 64, numLayers: 2, numHeads: 4, numKvHeads: 2, headDim: 8 };
    const adapter = {
      r: 1,
      alpha: 1,
      dropout: 0,
      useRslora: false,
      layers: new Map([[0, { q: { A: new Float32Array(32), B: new Float32Array(32) } }]]),
    };
    const meta = (w?: string) => new SafetensorsFile(exportMergedModel(base, adapter, dims, 'tiny', w), 'out').metadata;
    expect(meta('int4-g32')).toMatchObject({ merged_from: 'tiny', base_weights: 'int4-g32' });
    expect(meta('int4-g32').base_quantised).toMatch(/^the adapter was trained on the base quantised to int4-g32/);
    expect(meta()).toMatchObject({ base_weights: 'f32' });
    expect(meta().base_quantised).toBeUndefined();
  });
});
