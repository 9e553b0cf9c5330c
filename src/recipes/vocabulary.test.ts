import { describe, expect, it } from 'vitest';
import { recipeNames } from './registry';
import { RECIPE_WORLDS, vocabularyOf } from './vocabulary';

describe('recipe vocabulary', () => {
  it('every registered recipe declares its world, and no world is declared for a recipe that does not exist', () => {
    for (const name of recipeNames()) expect(() => vocabularyOf(name), name).not.toThrow();
    expect(Object.keys(RECIPE_WORLDS).sort()).toEqual([...recipeNames()].sort());
  });

  it('only the safety recipes speak of attacks and harm', () => {
    for (const name of recipeNames()) {
      const v = vocabularyOf(name);
      const words = JSON.stringify(v).toLowerCase();
      const safety = ['redteam', 'attack', 'defend', 'multiturn', 'arena', 'tokenbuncher'].includes(name);
      expect(/attack(?!er)|unsafe|harm/.test(words.replace(/"world":"[a-z]+"/, '')), name).toBe(safety);
    }
    expect(vocabularyOf('minmax').outcome).toEqual(['answer right', 'answer wrong']);
    expect(vocabularyOf('attacker-sft').filters).toBeNull();
  });
});
