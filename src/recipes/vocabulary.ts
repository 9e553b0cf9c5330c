// Which world's words each recipe's rollouts are shown in (the words: contract/vocabulary.ts).
// One line per recipe, and a test fails on a registered recipe missing here, so a new recipe picks
// its words on purpose instead of inheriting the safety recipes' "attack succeeded".
import { VOCABULARIES, type Vocabulary, type World } from '../contract/vocabulary';

export const RECIPE_WORLDS: Readonly<Record<string, World>> = {
  redteam: 'safety',
  attack: 'safety',
  defend: 'safety',
  multiturn: 'safety',
  arena: 'safety',
  tokenbuncher: 'safety',
  // Supervised: a goal, the attacker's greedy sample, and the loss against the target text; nothing is attacked.
  'attacker-sft': 'sft',
  // A policy answers questions, a monitor gives verdicts: right / wrong answers, no harm.
  minmax: 'qa',
  rlhf: 'qa',
};

/** The recipe's words; throws for a recipe without a world (the registry test catches it first). */
export function vocabularyOf(recipe: string): Vocabulary {
  const world = RECIPE_WORLDS[recipe];
  if (!world) throw new Error(`recipe ${recipe} declares no vocabulary world in src/recipes/vocabulary.ts`);
  return VOCABULARIES[world];
}
