// Property test of the checkpoint-file reader (CLI --save-checkpoint / --resume, defend's
// attackerCheckpoint), like the other parsers' (parsers.property.test.ts): every input, a valid
// file, its byte mutations or a field set to a hostile value, either parses to a checkpoint that
// keeps the format's invariants or throws one CheckpointFileError of at most MAX_MESSAGE_CHARS.
import fc from 'fast-check';
import { strFromU8, strToU8 } from 'fflate';
import { describe, expect, it } from 'vitest';
import { CheckpointFileError, checkpointFromJson, checkpointToJson } from '../../src/recipes/kit/checkpointFile';
import type { RecipeCheckpoint } from '../../src/recipes/kit/types';
import { byteMutation, hostileJsonText, mutateBytes, RUNS, total } from './mutate';

const tensorArb = (name: string) =>
  fc
    .record({ shape: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 2 }), seed: fc.nat(99) })
    .map(({ shape, seed }) => ({
      name,
      dtype: 'float32' as const,
      shape,
      data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => Math.sin(seed + i)),
    }));

const checkpointArb: fc.Arbitrary<RecipeCheckpoint> = fc
  .record({
    seed: fc.nat(1000),
    step: fc.nat(1000),
    a: tensorArb('p/a'),
    b: tensorArb('p/b'),
    moments: fc.boolean(),
  })
  .map(({ seed, step, a, b, moments }) => ({
    format: 1 as const,
    recipe: 'redteam',
    seed,
    step,
    config: { loraRank: 1 },
    tensors: [a, b],
    optimizer: {
      state: { step },
      tensors: moments
        ? [
            { ...a, name: 'p/a.exp_avg' },
            { ...a, name: 'p/a.exp_avg_sq' },
          ]
        : [],
    },
    rng: { seed, step },
    extra: {},
  }));

const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;

/** Parses `text`; what it accepts has counts where counts go and tensors whose values fill their shape, all finite. */
function check(text: string): RecipeCheckpoint | undefined {
  const r = total(() => checkpointFromJson(text, 'c.json'), CheckpointFileError);
  if (!r.ok) {
    expect(r.error.message.startsWith('c.json')).toBe(true);
    return undefined;
  }
  const p = r.value;
  expect([p.seed, p.step, p.optimizer.state.step, ...Object.values(p.rng)].every(isCount)).toBe(true);
  for (const t of [...p.tensors, ...p.optimizer.tensors]) {
    expect(t.data.length).toBe(t.shape.reduce((a, b) => a * b, 1));
    expect(Array.from(t.data).every(Number.isFinite)).toBe(true);
  }
  return p;
}

const FIELDS = ['kind', 'format', 'recipe', 'seed', 'step', 'config', 'extra', 'rng', 'optimizer', 'tensors'] as const;
const TENSOR_FIELDS = ['name', 'dtype', 'shape', 'data'] as const;

describe('checkpoint file reader: total, and what it accepts keeps the invariants', () => {
  it('valid files round-trip', () => {
    fc.assert(
      fc.property(checkpointArb, (p) => {
        const back = check(checkpointToJson(p));
        expect(back?.tensors.map((t) => [t.name, t.shape, Array.from(t.data)])).toEqual(
          p.tensors.map((t) => [t.name, t.shape, Array.from(t.data)]),
        );
      }),
      RUNS(50),
    );
  });

  it('byte mutations of the text get a checkpoint or a CheckpointFileError', () => {
    fc.assert(
      fc.property(checkpointArb, fc.array(byteMutation, { minLength: 1, maxLength: 3 }), (p, ms) => {
        check(strFromU8(ms.reduce(mutateBytes, strToU8(checkpointToJson(p)))));
      }),
      RUNS(400),
    );
  });

  it('a top-level, tensor or optimiser field set to a hostile value gets a checkpoint or a CheckpointFileError', () => {
    const where = fc.oneof(
      fc.constantFrom(...FIELDS).map((f) => (o: Record<string, unknown>) => (o[f] = '@@')),
      fc.constantFrom(...TENSOR_FIELDS).map((f) => (o: Record<string, unknown>) => {
        (o.tensors as Record<string, unknown>[])[1][f] = '@@';
      }),
      fc.constantFrom('state', 'tensors').map((f) => (o: Record<string, unknown>) => {
        (o.optimizer as Record<string, unknown>)[f] = '@@';
      }),
      fc.constant((o: Record<string, unknown>) => ((o.rng as Record<string, unknown>).step = '@@')),
    );
    fc.assert(
      fc.property(checkpointArb, where, hostileJsonText, (p, edit, text) => {
        const o = JSON.parse(checkpointToJson(p)) as Record<string, unknown>;
        edit(o);
        check(JSON.stringify(o).replace('"@@"', () => text));
      }),
      RUNS(400),
    );
  });

  it('refuses a hostile value with a message naming the field', () => {
    const o = JSON.parse(checkpointToJson(fc.sample(checkpointArb, { seed: 1, numRuns: 1 })[0])) as Record<
      string,
      unknown
    >;
    o.step = 'x'.repeat(100_000);
    expect(() => checkpointFromJson(JSON.stringify(o), 'c.json')).toThrow(CheckpointFileError);
    expect(() => checkpointFromJson(JSON.stringify(o), 'c.json')).toThrow(
      /^c\.json: field "step" must be a non-negative integer, got "x{60}"… \(100000 chars\)$/,
    );
  });
});
