// The shareable run-setup URL: recipe, every config field, seed, max steps and what happens at the
// limit, as query parameters (`?recipe=arena&seed=3&steps=20&at=pause&c.goals=2...`). Decoding
// keeps each raw value as the form would hold it, so an invalid one is shown (and marked) on its
// field instead of being dropped; fields the recipe does not have and bad setup values are named.
import { brief } from '../contract/brief';
import { closestNames } from '../contract/closest';
import { resolveAliases, resolveFieldName } from '../contract/aliases';
import { validateField, type Schema } from '../contract/schema';

/** What to do when the run reaches max steps. */
export type AtMax = 'pause' | 'stop';

/** Form values: text for number / integer / string / enum fields, booleans as they are. */
export type FormValues = Record<string, string | boolean>;

export interface RunSetup {
  recipe: string;
  values: FormValues;
  seed: string;
  /** Max steps as typed ('' = no limit). */
  maxSteps: string;
  atMax: AtMax;
}

export const CONFIG_PREFIX = 'c.';
/** Parameters this codec owns; anything else in the query (e.g. ?backend=) is left alone. */
const OWN_KEYS = new Set(['recipe', 'seed', 'steps', 'at']);

export function formDefaults(schema: Schema): FormValues {
  const out: FormValues = {};
  for (const [k, f] of Object.entries(schema)) out[k] = f.type === 'boolean' ? f.default : String(f.default);
  return out;
}

/**
 * The query string of `setup` merged into `base` (the page's current query): our keys replaced,
 * other parameters kept. Every schema field is written, so the link reproduces the run even if a
 * later version changes a default.
 */
export function encodeSetup(setup: RunSetup, schema: Schema, base = ''): string {
  const q = new URLSearchParams(base);
  for (const k of [...q.keys()]) if (OWN_KEYS.has(k) || k.startsWith(CONFIG_PREFIX)) q.delete(k);
  q.set('recipe', setup.recipe);
  q.set('seed', setup.seed);
  if (setup.maxSteps.trim() !== '') {
    q.set('steps', setup.maxSteps.trim());
    q.set('at', setup.atMax);
  }
  for (const [k, f] of Object.entries(schema)) {
    const v = setup.values[k] ?? (f.type === 'boolean' ? f.default : String(f.default));
    q.set(CONFIG_PREFIX + k, String(v));
  }
  return `?${q.toString()}`;
}

export interface DecodedSetup {
  setup: RunSetup;
  /** Field name (or `recipe`, `seed`, `steps`, `at`) -> message. */
  errors: Record<string, string>;
}

/** Max steps as typed: '' (no limit) or a positive integer. Returns an error message or null. */
export function maxStepsError(raw: string): string | null {
  const s = raw.trim();
  if (s === '') return null;
  return /^\d+$/.test(s) && Number(s) >= 1 && Number.isSafeInteger(Number(s))
    ? null
    : `max steps must be a positive integer up to 2^53 - 1 (or empty for no limit), got ${brief(raw)}`;
}

/** Seed as typed: a non-negative integer. Returns an error message or null. */
export function seedError(raw: string): string | null {
  return /^\d+$/.test(raw.trim()) && Number.isSafeInteger(Number(raw.trim()))
    ? null
    : `seed must be a non-negative integer, got ${brief(raw)}`;
}

/**
 * Reads a setup from a query string. Returns null when it names no recipe (a plain lab link).
 * `schemas` are the registered recipes' schemas by name.
 */
export function decodeSetup(search: string, schemas: Record<string, Schema>): DecodedSetup | null {
  const q = new URLSearchParams(search);
  const recipe = q.get('recipe');
  if (recipe === null) return null;
  // No prototype: a link setting c.__proto__ gets its error recorded like any other name.
  const errors: Record<string, string> = Object.create(null) as Record<string, string>;
  const schema = Object.hasOwn(schemas, recipe) ? schemas[recipe] : undefined;
  if (!schema)
    errors.recipe = `the link names recipe ${brief(recipe)}, which is not registered (recipes: ${Object.keys(schemas).join(', ')})`;
  const values: FormValues = schema ? formDefaults(schema) : {};
  for (const [key, raw0] of q) {
    if (!key.startsWith(CONFIG_PREFIX)) continue;
    const key0 = key.slice(CONFIG_PREFIX.length);
    if (!schema) continue;
    // A veRL key or TRL name (c.actor_rollout_ref.rollout.n=8) sets the lab field it aliases.
    const named = resolveFieldName(recipe, schema, key0);
    if (!named) {
      // The few nearest names at most: listing every field (66 for some recipes) buried the typo.
      const near = closestNames(key0, Object.keys(schema));
      errors[key0] =
        `the link sets ${brief(key0)}, which recipe ${recipe} does not have` +
        (near.length ? ` (did you mean ${near.join(', ')}?)` : '');
      continue;
    }
    const name = named.field;
    // Later parameters win, so a copied link (which names every field) can be edited by appending.
    const raw = named.via ? (resolveAliases(recipe, schema, { [key0]: raw0 }).input[name] as string) : raw0;
    const f = schema[name];
    const r = validateField(name, f, raw);
    if ('error' in r) {
      errors[name] = r.error;
      // A checkbox cannot show "maybe": it keeps its default and the message says what the link had.
      values[name] = f.type === 'boolean' ? f.default : raw;
    } else {
      values[name] = f.type === 'boolean' ? (r.value as boolean) : raw;
    }
  }
  const seed = q.get('seed') ?? '0';
  const seedErr = seedError(seed);
  if (seedErr) errors.seed = seedErr;
  const maxSteps = q.get('steps') ?? '';
  const stepsErr = maxStepsError(maxSteps);
  if (stepsErr) errors.steps = stepsErr;
  const at = q.get('at') ?? 'pause';
  if (at !== 'pause' && at !== 'stop') errors.at = `"at" must be pause or stop, got ${brief(at)}`;
  return { setup: { recipe, values, seed, maxSteps, atMax: at === 'stop' ? 'stop' : 'pause' }, errors };
}
