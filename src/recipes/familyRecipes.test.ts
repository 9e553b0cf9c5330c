// Every recipe on Qwen3 and Gemma 3 (the tiny fixtures of dev/fixtures/families, with their float64
// NumPy reference logits) on the tfjs path, each fixture loaded the three ways a person names a
// model: a hub id (the folder served under the hub's URL layout, no network), a local folder, a
// URL (the browser env's plain URL source). The nine recipes cover the 3 x 3 grid of source x
// weight format (f32, f16, int8) once per family. For each run: the loaded model is the family,
// its projections are in the format asked, in f32 its logits are within 1e-4 of the reference
// (before the step; B = 0 leaves the base), the step's learning metrics are finite and every
// trained model's LoRA B moved off zero; the run's PEFT export names modules the checkpoint has
// (transformers' names: model.layers.N.self_attn.q_proj ... mlp.down_proj) with PEFT's shapes; the
// recipe's veRL export selects exactly the checkpoint's target Linears. int4-gN: the fixtures'
// sizes (48, 24) take no group of 32, refused naming the tensor; int4 recipe runs are in
// hubFamilies.test.ts, the planned paths in e2e/recipesPlanned.e2e.ts.
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { unzipSync, strFromU8 } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../../dev/servers/hubServer';
import { serveFolder } from '../../dev/servers/staticServer';
import { loadWithCharCodec } from '../../dev/test/recipeTesting';
import {
  denseJudge,
  FAMILY_FIXTURES,
  familyCopies,
  tinyRecipes,
  trainedLora,
  TRAINED_MODELS,
  withWeights,
} from '../../dev/test/tinyRecipes';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { folderSource } from '../cli/fs-source';
import { hfTargetModules, loraTargets, type LoraTargetSet } from '../contract/loraTargets';
import type { WeightFormat } from '../contract/weightFormat';
import { forward, type LlamaModel } from '../model/llama';
import type { LoraSet } from '../model/lora';
import { parseSafetensors } from '../model/safetensors';
import { urlSource } from '../model/sources';
import { hubFolder, urlRecipeEnv } from './kit/env';
import { runAdapter } from './kit/adapterIo';
import { exportRunAdapters } from './kit/playerExport';
import type { LoadModelRefOptions, RecipeEnv } from './kit/types';
import type { ModelFolder } from '../model/load';
import { exportVerl } from './exports';
import { createRun, getRecipe, recipeNames } from './registry';

const FIXTURES = { qwen3: 'qwen3-bias', gemma3: 'gemma3-tied' } as const;
const FAMILIES_DIR = familyCopies(Object.values(FIXTURES));
const SOURCES = ['hub id', 'local folder', 'URL'] as const;
const FORMATS: WeightFormat[] = ['f32', 'f16', 'int8'];
type Source = (typeof SOURCES)[number];

/** The fixture's own Linear modules (2-D weights under model.layers) with their [out, in] shapes. */
function linearsOf(name: string): Map<string, number[]> {
  const st = parseSafetensors(new Uint8Array(readFileSync(`${FAMILY_FIXTURES}/${name}/model.safetensors`)), name);
  return new Map(
    st
      .names()
      .filter((n) => n.startsWith('model.layers.') && st.info(n).shape.length === 2)
      .map((n) => [n.replace(/\.weight$/, ''), st.info(n).shape]),
  );
}
const golden = (name: string) =>
  JSON.parse(readFileSync(`${FAMILY_FIXTURES}/${name}/golden.json`, 'utf8')) as {
    input_ids: number[];
    logits: number[][];
  };

let hub: HubServer;
let site: { url: string; close(): Promise<void> };
const loaded: LlamaModel[] = [];
const load = async (folder: ModelFolder, ref: string, opts?: LoadModelRefOptions) => {
  const m = await loadWithCharCodec(folder, ref, opts);
  loaded.push(m.model);
  return m;
};
const judges = { letters: denseJudge };

beforeAll(async () => {
  hub = await serveHubRepos(
    Object.fromEntries(Object.values(FIXTURES).map((n) => [`test-org/${n}`, `${FAMILIES_DIR}/${n}`])),
  );
  site = await serveFolder(FAMILIES_DIR);
});
afterAll(async () => {
  await hub?.close();
  await site?.close();
});

/** The model reference, the recipe env that resolves it, and the folder the worker's export reads. */
function source(kind: Source, name: string): { ref: string; env: RecipeEnv; folder: (ref: string) => ModelFolder } {
  switch (kind) {
    case 'hub id':
      return {
        ref: `test-org/${name}`,
        env: nodeRecipeEnv({ hubEndpoint: hub.endpoint, load, judges }),
        folder: (r) => hubFolder(r, hub.endpoint)!,
      };
    case 'local folder':
      return { ref: `${FAMILIES_DIR}/${name}`, env: nodeRecipeEnv({ load, judges }), folder: folderSource };
    case 'URL':
      return {
        ref: `${site.url.replace('localhost', '127.0.0.1').replace(/\/?$/, '/')}${name}/`,
        env: urlRecipeEnv({ load, judges }),
        folder: urlSource,
      };
  }
}

const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

it('the grid covers the nine built-in recipes', () => {
  expect(Object.keys(tinyRecipes('m')).sort()).toEqual([...recipeNames()].sort());
});

describe.each(Object.entries(FIXTURES))('%s (%s)', (family, name) => {
  const linears = linearsOf(name);
  const recipes = Object.entries(tinyRecipes('m'));
  const grid = recipes.map(([recipe], i) => ({ recipe, src: SOURCES[i % 3], format: FORMATS[Math.floor(i / 3) % 3] }));

  it.each(grid)(
    '$recipe by $src in $format: a step learns, its PEFT and veRL exports name the family modules',
    async ({ recipe, src, format }) => {
      const s = source(src, name);
      const r = getRecipe(recipe);
      const { config: tiny, steps } = tinyRecipes(s.ref)[recipe];
      const input = withWeights(r.schema, tiny, format);
      loaded.length = 0;
      const { run, config } = await createRun(s.env, recipe, input, 3);
      try {
        const trained = loaded.map(trainedLora).filter((x): x is LoraSet => x !== null);
        expect(trained.length).toBe(TRAINED_MODELS[recipe] ?? 1);
        for (const m of loaded) {
          expect(m.config.family).toBe(family);
          expect(m.layers[0].down.weight.kind).toBe(format === 'f32' ? 'f32' : format);
        }
        if (format === 'f32') {
          // B = 0 before the first step: the run's model computes the base, the reference's logits.
          const g = golden(name);
          const logits = tf.tidy(() => forward(loaded[0], [g.input_ids]).dataSync());
          expect(maxAbs(logits, g.logits.flat())).toBeLessThan(1e-4);
        }
        const before = trained.map((t) => t.adapters.map((a) => a.B.dataSync().slice()));
        const reports = [];
        for (let i = 0; i < steps; i++) reports.push(await run.step());
        for (const rep of reports)
          for (const [k, v] of Object.entries(rep.metrics)) expect(Number.isNaN(v), `${recipe} ${k}`).toBe(false);
        const learn = reports.flatMap((rep) =>
          Object.entries(rep.metrics).filter(([k]) => k.startsWith('loss/') || k.endsWith('grad/norm')),
        );
        expect(learn.length, 'a learning metric is reported').toBeGreaterThan(0);
        for (const [k, v] of learn) expect(Number.isFinite(v), k).toBe(true);
        trained.forEach((t, j) => {
          const moved = Math.max(...t.adapters.map((a, i) => maxAbs(a.B.dataSync(), before[j][i])));
          expect(moved, `trained model ${j}: LoRA B moved`).toBeGreaterThan(0);
        });

        // PEFT: each adapter folder's target_modules and tensor names against the checkpoint's Linears.
        const ra = runAdapter(r, config, run);
        const zip = unzipSync((await exportRunAdapters(ra, run, config, s.folder)).bytes);
        const configs = Object.keys(zip).filter((f) => f.endsWith('adapter_config.json'));
        expect(configs.length).toBe(TRAINED_MODELS[recipe] ?? 1);
        const set = config.loraTargets as LoraTargetSet;
        for (const f of configs) {
          const ac = JSON.parse(strFromU8(zip[f])) as {
            target_modules: string[];
            r: number;
            base_model_name_or_path: string;
          };
          expect([...ac.target_modules].sort()).toEqual(hfTargetModules(set).sort());
          expect(ac.base_model_name_or_path).toBe(s.ref);
          const st = parseSafetensors(zip[f.replace('adapter_config.json', 'adapter_model.safetensors')], f);
          const modules = new Set<string>();
          for (const key of st.names()) {
            const m = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/.exec(key);
            expect(m, key).not.toBeNull();
            const [out, inp] = linears.get(m![1]) ?? [];
            expect(out, `${m![1]} is a Linear of the checkpoint`).toBeDefined();
            // PEFT's LoraLayer: lora_A = nn.Linear(in_features, r), lora_B = nn.Linear(r, out_features)
            expect(st.info(key).shape).toEqual(m![2] === 'A' ? [ac.r, inp] : [out, ac.r]);
            modules.add(m![1]);
          }
          expect(modules.size).toBe(loaded[0].config.numLayers * loraTargets(set).length);
        }

        // veRL: target_modules is a regex PEFT full-matches against module names: exactly the set's Linears.
        const ex = exportVerl({ recipe: r, config: input, seed: 1 });
        // a URL is no model path veRL can load: the export says so (a hub id or a folder is loaded as it is)
        expect(ex.unsupported.some((u) => u.includes(`loaded from the URL ${s.ref}`))).toBe(src === 'URL');
        const key = recipe === 'attacker-sft' ? 'model.target_modules' : 'actor_rollout_ref.model.target_modules';
        const tm = String(ex.overrides[key]);
        const picked = [...linears.keys()].filter((m) =>
          tm === 'all-linear' ? true : new RegExp(`^(?:${tm})$`).test(m),
        );
        expect(picked.sort()).toEqual(
          [...linears.keys()].filter((m) => hfTargetModules(set).includes(m.split('.').pop()!)).sort(),
        );
      } finally {
        run.dispose();
      }
    },
  );

  it('int4-g32 is refused naming the tensor whose inputs no group of 32 divides', async () => {
    const s = source('local folder', name);
    await expect(s.env.loadModel(s.ref, { weights: 'int4-g32' })).rejects.toThrow(
      /weight format int4-g32 needs input sizes divisible by 32, but model\.layers\.0\.\S+ has (24|48) inputs/,
    );
  });
});
