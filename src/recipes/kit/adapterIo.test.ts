import { resolve } from 'node:path';
import { unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../cli/fs-source';
import { peftTensors } from '../../model/lora';
import { parseSafetensors } from '../../model/safetensors';
import { createRecipeEnv } from './env';
import { createRun, getRecipe } from '../registry';
import { loadWithCharCodec, TINY_ARENA } from '../../../dev/test/recipeTesting';
import type { RecipeRun } from './types';
import { exportAdapterZip, importAdapterIntoRun, runAdapter } from './adapterIo';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const folder = folderSource(FIXTURE);
const rows = Array.from({ length: 6 }, (_, i) =>
  JSON.stringify({ goal: `goal ${i}`, prompt: `Act as a villain. Goal ${i}.` }),
).join('\n');
const env = createRecipeEnv({ folder: () => folder, load: loadWithCharCodec, readText: async () => rows });
const base = { attacker: 'fixture', dataset: 'up.jsonl', batchSize: 2, lr: 2e-2, sampleEvery: 0, loraRank: 2 };

async function sftRun(
  config: Record<string, unknown>,
  seed: number,
): Promise<{ run: RecipeRun; config: Record<string, unknown> }> {
  const r = await createRun(env, 'attacker-sft', config, seed);
  return { run: r.run, config: r.config as Record<string, unknown> };
}

const tensorsOf = async (run: RecipeRun) => {
  const t = await peftTensors((run as unknown as { lora: Parameters<typeof peftTensors>[0] }).lora);
  return Object.fromEntries(Object.entries(t).map(([k, v]) => [k, Array.from(v.data)]));
};

describe('adapter export / import of a run', () => {
  const recipe = getRecipe('attacker-sft');

  it('round-trips a trained adapter into a fresh run of another seed, and resets its optimiser moments', async () => {
    const a = await sftRun(base, 1);
    const b = await sftRun(base, 2);
    try {
      for (let s = 0; s < 2; s++) await a.run.step();
      const ra = runAdapter(recipe, a.config, a.run);
      expect(ra).toMatchObject({ baseRef: 'fixture', recipe: 'attacker-sft', step: 2 });
      const { bytes, fileName } = await exportAdapterZip(ra, folder);
      expect(fileName).toBe('attacker-sft-fixture-step2-adapter.zip');
      const files = unzipSync(bytes);
      const st = parseSafetensors(files['adapter_model.safetensors'], 'a');
      // A sandbox name is no hub id: the export names the model's folder in a Sparring checkout, and says so.
      const cfg = JSON.parse(new TextDecoder().decode(files['adapter_config.json'])) as Record<string, unknown>;
      expect(cfg.base_model_name_or_path).toBe('./public/models/fixture');
      expect(new TextDecoder().decode(files['README.md'])).toMatch(
        /`\.\/public\/models\/fixture`: the built-in sandbox model "fixture" as a path inside a Sparring checkout/,
      );
      expect(st.names().every((n) => n.startsWith('base_model.model.model.layers.'))).toBe(true);

      await b.run.step();
      const want = await tensorsOf(a.run);
      expect(await tensorsOf(b.run)).not.toEqual(want);
      const r = await importAdapterIntoRun(b.run, runAdapter(recipe, b.config, b.run), folder, bytes, fileName);
      expect(r).toMatchObject({
        ok: true,
        r: 2,
        baseModel: './public/models/fixture',
        baseMismatch: false,
        step: 1,
        tensors: st.names().length,
      });
      expect(await tensorsOf(b.run)).toEqual(want);
      const state = await b.run.state();
      expect(state.optimizer.state.step).toBe(0);
      expect(state.optimizer.tensors).toEqual([]);
    } finally {
      a.run.dispose();
      b.run.dispose();
    }
  });

  it('refuses another rank, another alpha and another base, leaving the run untouched', async () => {
    const a = await sftRun(base, 1);
    const r4 = await sftRun({ ...base, loraRank: 4 }, 1);
    const alpha = await sftRun({ ...base, loraAlpha: 8 }, 1);
    try {
      const { bytes } = await exportAdapterZip(runAdapter(recipe, a.config, a.run), folder);
      const before = await tensorsOf(r4.run);
      const bad = await importAdapterIntoRun(r4.run, runAdapter(recipe, r4.config, r4.run), folder, bytes, 'a.zip');
      expect(bad).toEqual({
        ok: false,
        error: 'a.zip: rank r = 2, but this run\'s adapter has r = 4 (field "loraRank")',
      });
      expect(await tensorsOf(r4.run)).toEqual(before);
      const badAlpha = await importAdapterIntoRun(
        alpha.run,
        runAdapter(recipe, alpha.config, alpha.run),
        folder,
        bytes,
        'a.zip',
      );
      expect(badAlpha.ok === false && badAlpha.error).toMatch(
        /lora_alpha = 16, but this run's adapter has 8 \(field "loraAlpha"\)/,
      );
      const other = { ...runAdapter(recipe, a.config, a.run), baseRef: 'someone/else' };
      const wrongBase = await importAdapterIntoRun(a.run, other, folder, bytes, 'a.zip');
      expect(wrongBase.ok === false && wrongBase.error).toMatch(
        /field "base_model_name_or_path" is "\.\/public\/models\/fixture"; this adapter was trained on another base than "someone\/else"/,
      );
    } finally {
      a.run.dispose();
      r4.run.dispose();
      alpha.run.dispose();
    }
  });

  it('imports into a run that trains two adapters (arena): only the exported part changes, its moments reset', async () => {
    const arena = getRecipe('arena');
    const cfg = TINY_ARENA;
    const make = async (seed: number) => {
      const r = await createRun(env, 'arena', cfg, seed);
      return { run: r.run, config: r.config as Record<string, unknown> };
    };
    const a = await make(1);
    const b = await make(2);
    try {
      await a.run.step();
      await b.run.step();
      const { bytes, fileName } = await exportAdapterZip(runAdapter(arena, a.config, a.run), folder);
      const before = await b.run.state();
      const r = await importAdapterIntoRun(b.run, runAdapter(arena, b.config, b.run), folder, bytes, fileName);
      expect(r).toMatchObject({ ok: true, r: 2 });
      expect(await tensorsOf(b.run)).toEqual(await tensorsOf(a.run));
      const after = await b.run.state();
      const side = (p: typeof after, key: string) =>
        p.tensors.filter((t) => t.name.startsWith(`${key}/`)).map((t) => [t.name, Array.from(t.data)]);
      expect(side(after, 'attacker')).toEqual(side(before, 'attacker'));
      expect(after.optimizer.tensors.some((t) => t.name.startsWith('defender/'))).toBe(false);
      expect(after.optimizer.tensors.filter((t) => t.name.startsWith('attacker/')).length).toBe(
        before.optimizer.tensors.filter((t) => t.name.startsWith('attacker/')).length,
      );
      expect((after.extra.optimizerSteps as Record<string, number>).defender).toBe(0);
    } finally {
      a.run.dispose();
      b.run.dispose();
    }
  });

  it('says when there is no run', () => {
    expect(() => runAdapter(recipe, base, null)).toThrow(/no active run/);
  });

  it('refuses an adapter holding NaN or Infinity, naming the tensor and the index, and leaves the run untouched', async () => {
    const a = await sftRun(base, 1);
    const b = await sftRun(base, 2);
    try {
      await a.run.step();
      const { bytes } = await exportAdapterZip(runAdapter(recipe, a.config, a.run), folder);
      const files = unzipSync(bytes);
      const st = files['adapter_model.safetensors'];
      // safetensors: u64 header length, JSON header, data; poison one element of one tensor.
      const headerLen = Number(new DataView(st.buffer, st.byteOffset).getBigUint64(0, true));
      const header = JSON.parse(new TextDecoder().decode(st.subarray(8, 8 + headerLen))) as Record<
        string,
        { data_offsets: [number, number] }
      >;
      const name = Object.keys(header)
        .filter((k) => k.endsWith('lora_B.weight'))
        .sort()[0];
      for (const [value, shown] of [
        [NaN, 'NaN'],
        [-Infinity, '-Infinity'],
      ] as const) {
        const poisoned = st.slice();
        new DataView(poisoned.buffer).setFloat32(8 + headerLen + header[name].data_offsets[0] + 3 * 4, value, true);
        const zip = zipSync({ ...files, 'adapter_model.safetensors': poisoned });
        const before = await tensorsOf(b.run);
        const r = await importAdapterIntoRun(b.run, runAdapter(recipe, b.config, b.run), folder, zip, 'bad.zip');
        expect(r.ok).toBe(false);
        const error = r.ok ? '' : r.error;
        expect(error).toContain('bad.zip');
        expect(error).toContain(name);
        expect(error).toContain(shown);
        expect(error).toMatch(/\b3\b/);
        expect(await tensorsOf(b.run)).toEqual(before);
      }
    } finally {
      a.run.dispose();
      b.run.dispose();
    }
  });
});
