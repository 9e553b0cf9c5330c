import { resolve } from 'node:path';
import { strFromU8, unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../cli/fs-source';
import { peftTensors, type LoraSet } from '../../model/lora';
import { parseSafetensors } from '../../model/safetensors';
import { createRecipeEnv } from './env';
import { createRun, getRecipe } from '../registry';
import { RECIPE_PLAYERS } from '../players';
import { importPeftZip } from '../../storage/peft';
import { loadModelConfig } from '../../model/load';
import { loadWithCharCodec, TINY_ARENA } from '../../../dev/test/recipeTesting';
import { runAdapter } from './adapterIo';
import { exportRunAdapters, exportRunMerged } from './playerExport';

const folder = folderSource(resolve('dev/fixtures/tiny-llama-f32'));
const env = createRecipeEnv({ folder: () => folder, load: loadWithCharCodec, readText: async () => '' });

describe('a two-player run exports every player', () => {
  it("arena: one zip, a valid PEFT folder per player, each holding that player's own trained weights", async () => {
    const { run, config } = await createRun(env, 'arena', TINY_ARENA, 3);
    try {
      await run.step();
      await run.step();
      const ra = runAdapter(getRecipe('arena'), config as Record<string, unknown>, run);
      const f = await exportRunAdapters(ra, run, config as Record<string, unknown>, () => folder);
      expect(f.fileName).toBe('arena-attacker-defender-step2-adapters.zip');
      const files = unzipSync(f.bytes);
      expect(Object.keys(files).sort()).toEqual([
        'README.md',
        'attacker/README.md',
        'attacker/adapter_config.json',
        'attacker/adapter_model.safetensors',
        'defender/README.md',
        'defender/adapter_config.json',
        'defender/adapter_model.safetensors',
      ]);
      const dims = await loadModelConfig(folder);
      // The reference: each player's LoRA variables as the model holds them (not the checkpoint the export reads).
      const parts = (run as unknown as { parts: Record<string, { lora: LoraSet }> }).parts;
      const weights: Record<string, Float32Array[]> = {};
      for (const player of ['attacker', 'defender']) {
        const sub = Object.fromEntries(
          Object.entries(files)
            .filter(([n]) => n.startsWith(`${player}/`) && n !== `${player}/README.md`)
            .map(([n, b]) => [n.slice(player.length + 1), b]),
        );
        // Each folder on its own is an adapter the PEFT import accepts.
        const imported = importPeftZip(zipSync(sub), { dims, expectedBase: './public/models/fixture' });
        expect(imported.adapter.r).toBe(2);
        const st = parseSafetensors(sub['adapter_model.safetensors'], player);
        const want = await peftTensors(parts[player].lora);
        expect(st.names().sort()).toEqual(Object.keys(want).sort());
        for (const [n, t] of Object.entries(want)) expect(Array.from(st.getFloat32(n)), n).toEqual(Array.from(t.data));
        weights[player] = st.names().map((n) => st.getFloat32(n));
      }
      // Two adapters, not one written twice: their trained B matrices differ.
      expect(weights.attacker.map((w) => Array.from(w))).not.toEqual(weights.defender.map((w) => Array.from(w)));
      expect(strFromU8(files['README.md'])).toContain('- `attacker/`: the attacker');

      const m = await exportRunMerged(ra, run, config as Record<string, unknown>, () => folder);
      expect(m.fileName).toBe('arena-attacker-defender-step2-merged.zip');
      const merged = unzipSync(m.bytes);
      for (const player of ['attacker', 'defender'])
        expect(parseSafetensors(merged[`${player}/model.safetensors`], player).names()).toContain(
          'model.layers.0.self_attn.q_proj.weight',
        );
    } finally {
      run.dispose();
    }
  });

  it("declares players that are fields of their recipe's schema", () => {
    for (const [recipe, players] of Object.entries(RECIPE_PLAYERS))
      for (const p of players) expect(Object.keys(getRecipe(recipe).schema), recipe).toContain(p);
  });
});
