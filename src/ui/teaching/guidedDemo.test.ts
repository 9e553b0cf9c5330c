import { describe, expect, it } from 'vitest';
import { hasRecipeListing, recipeListing } from '../../../dev/test/recipeListings';
import { validateConfig, type Schema } from '../../contract/schema';
import type { RecipeListing } from '../../contract/workerApi';
import { DEMO_SETTINGS, demoRecipe } from './guidedDemo';

const listing = (name: string): RecipeListing => ({
  name,
  title: name,
  source: '',
  description: '',
  schema: {} as Schema,
});

describe('guided demo', () => {
  it('prefers arena, falls back to redteam, and needs one of them', () => {
    expect(demoRecipe([listing('redteam'), listing('arena')])?.name).toBe('arena');
    expect(demoRecipe([listing('attack'), listing('redteam')])?.name).toBe('redteam');
    expect(demoRecipe([listing('attack')])).toBeUndefined();
  });

  it('uses settings every registered demo recipe accepts', () => {
    for (const [name, values] of Object.entries(DEMO_SETTINGS)) {
      if (!hasRecipeListing(name)) continue;
      const v = validateConfig(recipeListing(name).schema, values);
      expect(v.errors, name).toEqual({});
    }
  });
});
