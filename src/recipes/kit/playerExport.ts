// The export of a run that trains several adapters (arena: attacker + defender; minmax: policy +
// monitor): one zip with a folder per player, each folder a PEFT adapter folder of its own
// (adapter_config.json naming that player's base model, adapter_model.safetensors, README.md), or
// each player's merged model.safetensors. The players' tensors come from the run's own checkpoint
// state (`<player>/<PEFT name>`), so a recipe needs no export code of its own for its second player.
// A recipe that trains one adapter exports it through adapterIo.ts.
import { strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { loadWeights, type ModelFolder } from '../../model/load';
import { playersOf } from '../players';
import type { RecipeRun } from './types';
import { exportPeftZip, fromPeftTensors, type PlainLoraAdapter } from '../../storage/peft';
import { exportMergedModel, quantisedBaseNote } from '../../storage/merge';
import { isWeightFormat } from '../../contract/weightFormat';
import { weightsFieldOf } from '../../contract/weightFields';
import type { FileBytes } from '../../contract/workerApi';
import {
  baseDims,
  exportAdapterZip,
  exportBaseModel,
  exportMergedWeights,
  exportReadme,
  type RunAdapter,
} from './adapterIo';

/** One player's adapter, read from the run's state. */
export interface PlayerAdapter {
  ra: RunAdapter;
  adapter: PlainLoraAdapter;
}

/** Every player's adapter of a run whose recipe trains several; null for a recipe that trains one. */
export async function playerAdapters(
  ra: RunAdapter,
  run: RecipeRun,
  config: Record<string, unknown>,
): Promise<PlayerAdapter[] | null> {
  const players = playersOf(ra.recipe);
  if (!players) return null;
  const state = await run.state();
  return players.map((part) => {
    const ref = config[part];
    if (typeof ref !== 'string' || ref === '') throw new Error(`recipe "${ra.recipe}": field "${part}" names no model`);
    const prefix = `${part}/`;
    const tensors = Object.fromEntries(
      state.tensors.filter((t) => t.name.startsWith(prefix)).map((t) => [t.name.slice(prefix.length), t]),
    ) as Record<string, { shape: number[]; data: Float32Array }>;
    if (Object.keys(tensors).length === 0)
      throw new Error(`run of ${ra.recipe}: its checkpoint holds no adapter tensors for player "${part}"`);
    const w = config[weightsFieldOf(part)];
    const player: RunAdapter = { ...ra, baseRef: ref, part, baseWeights: isWeightFormat(w) ? w : 'f32' };
    // Both players share the recipe's LoRA settings (rank, alpha, dropout): attachConfiguredLora from one config.
    return { ra: player, adapter: fromPeftTensors(tensors, ra.lora.config) };
  });
}

const stem = (ra: RunAdapter, players: PlayerAdapter[]) =>
  `${ra.recipe}-${players.map((p) => p.ra.part).join('-')}-step${ra.step}`;

function indexReadme(ra: RunAdapter, players: PlayerAdapter[], what: string): string {
  return [
    `# ${ra.recipe}, step ${ra.step}: ${players.length} ${what}`,
    '',
    `The run trains one LoRA adapter per player; each folder holds one player's ${what.replace(/s$/, '')}:`,
    '',
    ...players.map((p) => `- \`${p.ra.part}/\`: the ${p.ra.part}, base model \`${exportBaseModel(p.ra.baseRef)}\``),
    '',
  ].join('\n');
}

function zipOf(files: Record<string, Uint8Array>): Uint8Array {
  const z: Zippable = {};
  // Float weights barely deflate: store them, deflate the text.
  for (const [name, bytes] of Object.entries(files))
    z[name] = [bytes, { level: name.endsWith('.md') || name.endsWith('.json') ? 6 : 0 }];
  return zipSync(z);
}

/** The run's adapters: one PEFT zip for a one-adapter recipe, a folder per player for the others. */
export async function exportRunAdapters(
  ra: RunAdapter,
  run: RecipeRun,
  config: Record<string, unknown>,
  folderOf: (ref: string) => ModelFolder,
): Promise<FileBytes> {
  const players = await playerAdapters(ra, run, config);
  if (!players) return exportAdapterZip(ra, folderOf(ra.baseRef));
  const files: Record<string, Uint8Array> = { 'README.md': strToU8(indexReadme(ra, players, 'PEFT adapters')) };
  for (const p of players) {
    const zip = exportPeftZip(p.adapter, {
      baseModel: exportBaseModel(p.ra.baseRef),
      dims: await baseDims(folderOf(p.ra.baseRef)),
      readme: exportReadme(p.ra),
      folder: p.ra.part,
    });
    // Files only: a zip tool makes the folders from the paths.
    for (const [name, bytes] of Object.entries(unzipSync(zip))) if (!name.endsWith('/')) files[name] = bytes;
  }
  return { fileName: `${stem(ra, players)}-adapters.zip`, bytes: zipOf(files) };
}

/** The run's merged model: one safetensors for a one-adapter recipe, a zip with each player's for the others. */
export async function exportRunMerged(
  ra: RunAdapter,
  run: RecipeRun,
  config: Record<string, unknown>,
  folderOf: (ref: string) => ModelFolder,
): Promise<FileBytes> {
  const players = await playerAdapters(ra, run, config);
  if (!players) return exportMergedWeights(ra, folderOf(ra.baseRef));
  const files: Record<string, Uint8Array> = { 'README.md': strToU8(indexReadme(ra, players, 'merged models')) };
  const notes: string[] = [];
  for (const p of players) {
    const folder = folderOf(p.ra.baseRef);
    files[`${p.ra.part}/model.safetensors`] = exportMergedModel(
      await loadWeights(folder),
      p.adapter,
      await baseDims(folder),
      p.ra.baseRef,
      p.ra.baseWeights,
    );
    const note = quantisedBaseNote(p.ra.baseWeights);
    if (note) notes.push(`${p.ra.part}: ${note}`);
  }
  return {
    fileName: `${stem(ra, players)}-merged.zip`,
    bytes: zipOf(files),
    ...(notes.length ? { note: notes.join('; ') } : {}),
  };
}
