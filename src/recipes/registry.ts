// Recipes by the name researchers type. The built-in recipes register themselves when this module
// loads; a plug-in (or a test) can add its own with registerRecipe.
import { arenaRecipe } from './arena/arena';
import { attackRecipe } from './attack/attack';
import { attackerSftRecipe } from './attacker-sft/attackerSft';
import { defendRecipe } from './defend/defend';
import { tokenbuncherRecipe } from './tokenbuncher/tokenbuncher';
import { minmaxRecipe } from './minmax/minmax';
import { multiturnRecipe } from './multiturn/multiturn';
import { redteamRecipe } from './redteam/redteam';
import { rlhfRecipe } from './rlhf/rlhf';
import { createTimedRun } from './kit/judgeTiming';
import { currentNames } from '../contract/aliases';
import { ConfigError, validateConfig, type ConfigOf, type Schema, type ValidationResult } from '../contract/schema';
import type { AnyRecipe, Recipe, RecipeEnv, RecipeRun } from './kit/types';

const RECIPES = new Map<string, AnyRecipe>();

export function registerRecipe<S extends Schema>(recipe: Recipe<S>): void {
  if (!/^[a-z][a-z0-9-]*$/.test(recipe.name))
    throw new Error(`recipe name "${recipe.name}" must be lower-case letters, digits and dashes`);
  if (RECIPES.has(recipe.name)) throw new Error(`recipe "${recipe.name}" is already registered`);
  RECIPES.set(recipe.name, recipe as unknown as AnyRecipe);
}

export function unregisterRecipe(name: string): boolean {
  return RECIPES.delete(name);
}

export function recipeNames(): string[] {
  return [...RECIPES.keys()];
}

export function listRecipes(): AnyRecipe[] {
  return [...RECIPES.values()];
}

export function hasRecipe(name: string): boolean {
  return RECIPES.has(name);
}

/** The recipe, or an error listing the registered names. */
export function getRecipe(name: string): AnyRecipe {
  const r = RECIPES.get(name);
  if (!r) throw new Error(`unknown recipe "${name}" (recipes: ${recipeNames().join(', ')})`);
  return r;
}

/** The schema's validation, then the recipe's own cross-field check (recipe.check) on a valid config. */
export function validateRecipeConfig(
  recipe: AnyRecipe,
  input: Record<string, unknown>,
): ValidationResult<ConfigOf<Schema>> {
  const named = currentNames(recipe.name, recipe.schema, input);
  const v = validateConfig(recipe.schema, named.input);
  if (Object.keys(named.errors).length)
    return { ok: false, config: v.config, errors: { ...v.errors, ...named.errors } };
  if (!v.ok || !recipe.check) return v;
  const errors = recipe.check(v.config);
  return Object.keys(errors).length ? { ok: false, config: v.config, errors } : v;
}

/** Validate `input` against the recipe's schema (throws a ConfigError naming every bad field) and create the run. */
export async function createRun(
  env: RecipeEnv,
  name: string,
  input: Record<string, unknown>,
  seed: number,
): Promise<{ recipe: AnyRecipe; config: ConfigOf<Schema>; run: RecipeRun }> {
  const recipe = getRecipe(name);
  if (!Number.isInteger(seed)) throw new Error(`seed must be an integer, got ${seed}`);
  const v = validateRecipeConfig(recipe, input);
  if (!v.ok) throw new ConfigError(`recipe ${name}`, v.errors);
  const run = await createTimedRun(recipe, env, v.config, seed);
  return { recipe, config: v.config, run };
}

registerRecipe(redteamRecipe);
registerRecipe(attackerSftRecipe);
registerRecipe(attackRecipe);
registerRecipe(multiturnRecipe);
registerRecipe(arenaRecipe);
registerRecipe(defendRecipe);
registerRecipe(tokenbuncherRecipe);
registerRecipe(minmaxRecipe);
registerRecipe(rlhfRecipe);
