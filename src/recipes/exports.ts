// Which recipes export to veRL / TRL, and with which entry: the map from recipe name to the export
// entry each recipe folder declares (src/recipes/<name>/export.ts), and the exporter's calls with
// the entry looked up, so the CLI and the page name a recipe and the exporter never imports one.
import {
  attackerPlan as planAttacker,
  exportSettings as settingsOf,
  exportSft,
  exportVerl as exportRl,
  type ExportRecipe,
  type VerlExport,
  type VerlExportInput,
} from '../export/verl/index';
import type { Schema } from '../contract/schema';
import { modelPathFor } from '../export/verl/index';
import { arenaExport } from './arena/export';
import { attackExport } from './attack/export';
import { attackerSftExport } from './attacker-sft/export';
import { defendExport } from './defend/export';
import { minmaxExport } from './minmax/export';
import { multiturnExport } from './multiturn/export';
import { redteamExport } from './redteam/export';
import { rlhfExport } from './rlhf/export';
import { tokenbuncherExport } from './tokenbuncher/export';

export { modelPathFor } from '../export/verl/index';
export type { VerlExport, VerlExportInput } from '../export/verl/index';

/** The RL recipes' export entries. */
export const EXPORT_RECIPES: Readonly<Record<string, ExportRecipe>> = {
  redteam: redteamExport,
  defend: defendExport,
  tokenbuncher: tokenbuncherExport,
  attack: attackExport,
  rlhf: rlhfExport,
  minmax: minmaxExport,
  multiturn: multiturnExport,
  arena: arenaExport,
};

/** attacker-sft exports as a veRL SFT job, not through an RL entry. */
const SFT = attackerSftExport.name;

/** Recipes with a veRL export: the RL recipes above and attacker-sft (an SFT job). */
export const EXPORTABLE_RECIPES: readonly string[] = [...Object.keys(EXPORT_RECIPES), SFT];

/** The export entry of an RL recipe, or an error naming the exportable recipes. */
export function exportRecipe(name: string): ExportRecipe {
  const r = Object.hasOwn(EXPORT_RECIPES, name) ? EXPORT_RECIPES[name] : undefined;
  if (!r)
    throw new Error(
      `recipe "${name}" has no veRL reward export (RL recipes: ${Object.keys(EXPORT_RECIPES).join(', ')})`,
    );
  return r;
}

/** The config field naming the model a recipe's export trains; an error names the exportable recipes. */
export function exportModelField(recipe: string): string {
  if (recipe === SFT) return attackerSftExport.modelField;
  if (!Object.hasOwn(EXPORT_RECIPES, recipe))
    throw new Error(`recipe "${recipe}" has no veRL export yet (exportable: ${EXPORTABLE_RECIPES.join(', ')})`);
  return exportRecipe(recipe).modelField;
}

/**
 * defend / arena: the goals an attacker model should write prompts for, with the validated config,
 * so a caller with models (the CLI) can sample them and pass attackPrompts. Null for recipes whose
 * prompts come from the sandbox.
 */
export function attackerPlan(input: Omit<VerlExportInput, 'attackPrompts'>): ReturnType<typeof planAttacker> {
  if (input.recipe.name === SFT) return null;
  exportModelField(input.recipe.name);
  return planAttacker(input, exportRecipe(input.recipe.name));
}

/**
 * The sandbox models a recipe's reward.py asks (attack's frozen defender) for a config as the CLI or
 * the form holds it (a field left out takes the schema's default), so a caller can ship their files.
 */
export function frozenSandboxes(recipe: string, config: Record<string, unknown>, schema: Schema): string[] {
  if (!Object.hasOwn(EXPORT_RECIPES, recipe)) return [];
  const spec = EXPORT_RECIPES[recipe];
  const c = { ...Object.fromEntries(Object.entries(schema).map(([k, f]) => [k, f.default])), ...config };
  return (spec.frozen?.(c) ?? []).flatMap((m) => {
    const s = modelPathFor(String(c[m.field])).sandbox;
    return s ? [s] : [];
  });
}

/** An RL recipe's export settings without its files (tests over many configs). */
export function exportSettings(input: VerlExportInput): ReturnType<typeof settingsOf> {
  exportModelField(input.recipe.name);
  return settingsOf(input, exportRecipe(input.recipe.name));
}

/** A recipe run as a veRL (and, where it fits, TRL) job folder, in memory. */
export function exportVerl(input: VerlExportInput): VerlExport {
  if (input.recipe.name === SFT) return exportSft(input);
  exportModelField(input.recipe.name);
  return exportRl(input, exportRecipe(input.recipe.name));
}
