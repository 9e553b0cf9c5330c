// The registered recipes as the worker lists them, read from dev/fixtures/recipe-listings.json
// (kept equal to the registry by src/recipes/schemaFixture.test.ts), for the page's unit tests.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Lesson } from '../../src/contract/lesson';
import type { Schema } from '../../src/contract/schema';

export interface RecipeListingFixture {
  name: string;
  title: string;
  source: string;
  description: string;
  schema: Schema;
  lesson?: Lesson;
}

let cached: RecipeListingFixture[] | null = null;

export function recipeListings(): RecipeListingFixture[] {
  return (cached ??= JSON.parse(
    readFileSync(resolve('dev/fixtures/recipe-listings.json'), 'utf8'),
  ) as RecipeListingFixture[]);
}

/** One recipe's listing; throws naming the recipes there are. */
export function recipeListing(name: string): RecipeListingFixture {
  const r = recipeListings().find((l) => l.name === name);
  if (!r)
    throw new Error(
      `no recipe "${name}" in dev/fixtures/recipe-listings.json (${recipeListings()
        .map((l) => l.name)
        .join(', ')})`,
    );
  return r;
}

export function hasRecipeListing(name: string): boolean {
  return recipeListings().some((l) => l.name === name);
}
