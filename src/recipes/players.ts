// Recipes that train more than one adapter, and their players: each a model field of the recipe
// and the key its adapter's tensors carry in the run's checkpoint (`<player>/<PEFT name>`,
// kit/state.ts multiLoraRunState). An export of such a run writes every player's adapter; a recipe
// missing here exports its one adapter (its modelField). A test checks each list against a run's
// own checkpoint, so a player cannot be left out.

export const RECIPE_PLAYERS: Readonly<Record<string, readonly string[]>> = {
  arena: ['attacker', 'defender'],
  minmax: ['policy', 'monitor'],
  // rlhf's monitor stays as loaded (the baseline's point): one adapter, the policy's.
};

/** The players of a recipe that trains several adapters; null for a recipe that trains one. */
export function playersOf(recipe: string): readonly string[] | null {
  return RECIPE_PLAYERS[recipe] ?? null;
}
