// The registered recipes' listings (name, title, source, description, schema, lesson: what the worker
// posts to the page) kept as a fixture, so the page's tests (ui/, store/) exercise the real schemas
// without importing recipes. This test keeps the fixture equal to the registry:
// `UPDATE_FIXTURES=1 npx vitest run src/recipes/schemaFixture.test.ts` rewrites it after a change.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listRecipes } from './registry';
import { vocabularyOf } from './vocabulary';
import { playersOf } from './players';

const FIXTURE = resolve('dev/fixtures/recipe-listings.json');

describe('recipe listings fixture', () => {
  it('matches the registered recipes', () => {
    const listings = listRecipes().map((r) => ({
      name: r.name,
      title: r.title,
      source: r.source,
      description: r.description,
      schema: r.schema,
      lesson: r.lesson,
      vocabulary: vocabularyOf(r.name),
      ...(playersOf(r.name) ? { players: [...playersOf(r.name)!] } : {}),
    }));
    const text = `${JSON.stringify(listings, null, 2)}\n`;
    if (process.env.UPDATE_FIXTURES === '1') writeFileSync(FIXTURE, text);
    expect(
      readFileSync(FIXTURE, 'utf8'),
      'run with UPDATE_FIXTURES=1 to rewrite dev/fixtures/recipe-listings.json',
    ).toBe(text);
  });
});
