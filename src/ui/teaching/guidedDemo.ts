// The guided demo: the sandbox `arena` (attacker and defender co-trained) with settings picked to
// show both phases within a minute or two, started in one click. Until `arena` is registered it
// falls back to `redteam`. The settings go into the setup form, so what runs is what it shows.
import { useRunStore } from '../../store/runStore';
import { formDefaults } from '../../store/setupUrl';
import { useSetup } from '../../store/setupStore';
import type { RecipeListing } from '../../contract/workerApi';
import { startRun } from '../controls/runActions';

/** Preferred recipes, first registered wins. */
export const DEMO_RECIPES = ['arena', 'redteam'] as const;

/**
 * Small batches and short replies keep a step to seconds on the sandbox models; 3-step phases
 * show the attack success rate rise and fall within the 60 steps the demo runs before pausing;
 * a pool of 8 goals brings each prompt back every few steps, so a pinned one has a history.
 */
export const DEMO_SETTINGS: Record<(typeof DEMO_RECIPES)[number], Record<string, string | boolean>> = {
  arena: {
    goalPool: '8',
    goals: '2',
    groupSize: '4',
    benignPrompts: '1',
    attackerMaxTokens: '24',
    defenderMaxTokens: '24',
    phaseSteps: '3',
    samples: '4',
    loraRank: '4',
    evalEvery: '0',
  },
  redteam: {
    prompts: '2',
    groupSize: '4',
    promptPool: '8',
    maxNewTokens: '16',
    samples: '4',
    loraRank: '4',
    earlyStop: false,
  },
};
export const DEMO_SEED = '1';
export const DEMO_MAX_STEPS = '60';

export function demoRecipe(recipes: readonly RecipeListing[]): RecipeListing | undefined {
  for (const name of DEMO_RECIPES) {
    const r = recipes.find((x) => x.name === name);
    if (r) return r;
  }
  return undefined;
}

/** Fills the setup with the demo and starts it; returns the recipe started (or null). */
export async function startGuidedDemo(): Promise<string | null> {
  const s = useSetup.getState();
  const recipe = demoRecipe(s.recipes);
  if (!recipe) {
    s.patch({
      commandError: `the guided demo needs one of the recipes ${DEMO_RECIPES.join(', ')}; none is registered`,
    });
    return null;
  }
  const values = { ...formDefaults(recipe.schema), ...DEMO_SETTINGS[recipe.name as keyof typeof DEMO_SETTINGS] };
  useSetup.setState((st) => ({
    recipeName: recipe.name,
    valuesByRecipe: { ...st.valuesByRecipe, [recipe.name]: values },
    seed: DEMO_SEED,
    maxSteps: DEMO_MAX_STEPS,
    atMax: 'pause',
    linkErrors: {},
    demoOwned: true,
  }));
  const ok = await startRun({ recipe: recipe.name, values, seed: DEMO_SEED, maxSteps: DEMO_MAX_STEPS, atMax: 'pause' });
  if (ok) pinFirstPrompt(useSetup.getState().status.runId);
  return ok ? recipe.name : null;
}

/**
 * Pins the demo's first rollout's prompt (unless the user pinned one), so the entropy heatmap fills
 * from the first step: it stayed empty until the user found the Pin button (issue 41).
 */
function pinFirstPrompt(runId: string | null): void {
  if (runId === null || useRunStore.getState().pinnedKey !== null) return;
  const unsubscribe = useRunStore.subscribe((st) => {
    if (st.pinnedKey !== null || !st.order.includes(runId)) {
      if (st.pinnedKey !== null) unsubscribe();
      return;
    }
    const first = st.samples.find((e) => e.runId === runId);
    if (!first) return;
    unsubscribe();
    st.pin(first.sample.promptKey);
  });
}
