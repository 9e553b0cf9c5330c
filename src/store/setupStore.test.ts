import { beforeEach, describe, expect, it } from 'vitest';
import { int, str } from '../contract/schema';
import type { RecipeListing } from '../contract/workerApi';
import { IDLE_STATUS, useSetup, valuesOf } from './setupStore';
import { decodeSetup } from './setupUrl';

const recipes: RecipeListing[] = [
  {
    name: 'redteam',
    title: '',
    source: '',
    description: '',
    schema: { defender: str('defender', 'model', { nonEmpty: true }), groupSize: int(8, 'G', { min: 2, max: 64 }) },
  },
  { name: 'attack', title: '', source: '', description: '', schema: { goals: int(4, 'goals', { min: 1 }) } },
];

describe('setup store', () => {
  beforeEach(() => {
    useSetup.setState({
      recipes: [],
      recipeName: '',
      valuesByRecipe: {},
      seed: '0',
      maxSteps: '',
      atMax: 'pause',
      linkErrors: {},
      workerErrors: {},
      status: IDLE_STATUS,
      demoOwned: false,
    });
    useSetup.getState().setRecipes(recipes);
  });

  it("drops the demo's seed and step limit when another recipe is picked, not a user's own", () => {
    // What startGuidedDemo writes (seed 1, 60 steps then pause).
    useSetup.setState({ seed: '1', maxSteps: '60', atMax: 'pause', demoOwned: true });
    useSetup.getState().setRecipe('attack');
    expect(useSetup.getState()).toMatchObject({ recipeName: 'attack', seed: '0', maxSteps: '', demoOwned: false });
    // Typed by the user: kept across recipes.
    useSetup.getState().setSeed('9');
    useSetup.getState().setMaxSteps('12');
    useSetup.getState().setRecipe('redteam');
    expect(useSetup.getState()).toMatchObject({ recipeName: 'redteam', seed: '9', maxSteps: '12' });
  });

  it('starts on the first recipe with its defaults, and keeps values per recipe', () => {
    const s = useSetup.getState();
    expect(s.recipeName).toBe('redteam');
    expect(valuesOf(s, 'redteam')).toEqual({ defender: 'defender', groupSize: '8' });
    s.setValue('groupSize', '4');
    useSetup.getState().setRecipe('attack');
    useSetup.getState().setValue('goals', '2');
    useSetup.getState().setRecipe('redteam');
    expect(valuesOf(useSetup.getState(), 'redteam').groupSize).toBe('4');
    expect(valuesOf(useSetup.getState(), 'attack').goals).toBe('2');
  });

  it("applies a link, and clears a field's mark when that field changes", () => {
    const d = decodeSetup(
      '?recipe=attack&seed=x&c.goals=0&c.nope=1',
      Object.fromEntries(recipes.map((r) => [r.name, r.schema])),
    )!;
    useSetup.getState().applyLink(d);
    let s = useSetup.getState();
    expect(s.recipeName).toBe('attack');
    expect(valuesOf(s, 'attack').goals).toBe('0');
    expect(Object.keys(s.linkErrors).sort()).toEqual(['goals', 'nope', 'seed']);
    s.setValue('goals', '3');
    s.setSeed('7');
    s = useSetup.getState();
    expect(Object.keys(s.linkErrors)).toEqual(['nope']);
    s.resetValues();
    expect(useSetup.getState().linkErrors).toEqual({});
    expect(valuesOf(useSetup.getState(), 'attack').goals).toBe('4');
  });

  it('keeps the current recipe when the link names an unknown one', () => {
    const d = decodeSetup('?recipe=ghost&seed=3', Object.fromEntries(recipes.map((r) => [r.name, r.schema])))!;
    useSetup.getState().applyLink(d);
    const s = useSetup.getState();
    expect(s.recipeName).toBe('redteam');
    expect(s.seed).toBe('3');
    expect(s.linkErrors.recipe).toMatch(/"ghost"/);
  });
});
