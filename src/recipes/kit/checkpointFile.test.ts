// The checkpoint file (CLI --save-checkpoint, defend.attackerCheckpoint): one error naming the
// file, the field and the expected form for every malformed part, and a right value otherwise.
import { describe, expect, it } from 'vitest';
import type { NamedTensor } from '../../contract/namedTensor';
import { checkpointFromJson, checkpointToJson } from './checkpointFile';
import type { RecipeCheckpoint } from './types';

const t = (name: string, shape: number[], values: number[]): NamedTensor => ({
  name,
  dtype: 'float32',
  shape,
  data: Float32Array.from(values),
});

function good(): RecipeCheckpoint {
  return {
    format: 1,
    recipe: 'redteam',
    seed: 4,
    step: 3,
    config: { loraRank: 1 },
    tensors: [t('p/a', [1, 2], [0.5, -1]), t('p/b', [2, 1], [2, 3])],
    optimizer: {
      state: { step: 3 },
      tensors: [t('p/a.exp_avg', [1, 2], [0.1, 0.2]), t('p/a.exp_avg_sq', [1, 2], [0.01, 0.04])],
    },
    rng: { seed: 4, step: 3, lora_dropout_calls_0: 6 },
    extra: { done: false },
  };
}

/** The file's JSON object, changed by `edit`, back as text. */
function edited(edit: (o: Record<string, unknown>) => void, p = good()): string {
  const o = JSON.parse(checkpointToJson(p)) as Record<string, unknown>;
  edit(o);
  return JSON.stringify(o);
}

describe('checkpoint file', () => {
  it('round-trips every field, values exact', () => {
    const back = checkpointFromJson(checkpointToJson(good()), 'c.json');
    expect(back.tensors.map((x) => [x.name, x.shape, Array.from(x.data)])).toEqual([
      ['p/a', [1, 2], [0.5, -1]],
      ['p/b', [2, 1], [2, 3]],
    ]);
    expect(Array.from(back.optimizer.tensors[1].data)).toEqual([Math.fround(0.01), Math.fround(0.04)]);
    expect(back).toMatchObject({
      recipe: 'redteam',
      seed: 4,
      step: 3,
      config: { loraRank: 1 },
      rng: { lora_dropout_calls_0: 6 },
      extra: { done: false },
      optimizer: { state: { step: 3 } },
    });
  });

  it.each([
    [
      'step -1',
      (o: Record<string, unknown>) => (o.step = -1),
      /c\.json: field "step" must be a non-negative integer, got -1$/,
    ],
    [
      'step 1.5',
      (o: Record<string, unknown>) => (o.step = 1.5),
      /field "step" must be a non-negative integer, got 1\.5/,
    ],
    ['seed -1', (o: Record<string, unknown>) => (o.seed = -1), /field "seed" must be a non-negative integer, got -1/],
    [
      'seed a string',
      (o: Record<string, unknown>) => (o.seed = '4'),
      /field "seed" must be a non-negative integer, got "4"/,
    ],
    ['config a list', (o: Record<string, unknown>) => (o.config = [1]), /field "config" must be an object, got \[1\]/],
    ['config null', (o: Record<string, unknown>) => (o.config = null), /field "config" must be an object, got null/],
    ['extra a number', (o: Record<string, unknown>) => (o.extra = 5), /field "extra" must be an object, got 5/],
    [
      'rng counter negative',
      (o: Record<string, unknown>) => ((o.rng as Record<string, unknown>).step = -2),
      /field "rng\.step" must be a non-negative integer, got -2/,
    ],
    [
      'optimiser step 0.5',
      (o: Record<string, unknown>) => ((o.optimizer as { state: { step: number } }).state.step = 0.5),
      /field "optimizer\.state\.step" must be a non-negative integer, got 0\.5/,
    ],
  ])('refuses %s', (_, edit, message) => {
    expect(() => checkpointFromJson(edited(edit), 'c.json')).toThrow(message);
  });

  it('refuses step and seed of Infinity (1e999 in the text)', () => {
    const text = checkpointToJson(good());
    expect(() => checkpointFromJson(text.replace('"step":3', '"step":1e999'), 'c.json')).toThrow(
      /field "step" must be a non-negative integer, got Infinity/,
    );
    expect(() => checkpointFromJson(text.replace('"seed":4', '"seed":-1e999'), 'c.json')).toThrow(
      /field "seed" must be a non-negative integer, got -Infinity/,
    );
  });

  it('refuses NaN and Infinity in tensors and moments, naming the tensor and the index', () => {
    const p = good();
    p.tensors[1] = t('p/b', [2, 1], [2, NaN]);
    expect(() => checkpointFromJson(checkpointToJson(p), 'c.json')).toThrow(
      /c\.json: tensors\[1\] \(p\/b\): holds NaN at index 1/,
    );
    const q = good();
    q.optimizer.tensors[0] = t('p/a.exp_avg', [1, 2], [Infinity, 0]);
    expect(() => checkpointFromJson(checkpointToJson(q), 'c.json')).toThrow(
      /optimizer\.tensors\[0\] \(p\/a\.exp_avg\): holds Infinity at index 0/,
    );
  });

  it('refuses moments that do not match their parameters', () => {
    const named = good();
    named.optimizer.tensors[0] = t('p/z.exp_avg', [1, 2], [0, 0]);
    expect(() => checkpointFromJson(checkpointToJson(named), 'c.json')).toThrow(
      /"p\/z\.exp_avg" is not <tensor name>\.exp_avg or \.exp_avg_sq of a tensor in "tensors"/,
    );
    const shaped = good();
    shaped.optimizer.tensors[1] = t('p/a.exp_avg_sq', [2, 1], [0, 0]);
    expect(() => checkpointFromJson(checkpointToJson(shaped), 'c.json')).toThrow(
      /"p\/a\.exp_avg_sq" has shape \[2, 1\], its parameter "p\/a" is \[1, 2\]/,
    );
    const unpaired = good();
    unpaired.optimizer.tensors.pop();
    expect(() => checkpointFromJson(checkpointToJson(unpaired), 'c.json')).toThrow(
      /"p\/a\.exp_avg" has no "p\/a\.exp_avg_sq"/,
    );
    const twice = good();
    twice.tensors.push(t('p/a', [1, 2], [0, 0]));
    expect(() => checkpointFromJson(checkpointToJson(twice), 'c.json')).toThrow(
      /tensors\[2\] \(p\/a\): the name appears twice/,
    );
  });

  it('keeps messages short whatever the bad value', () => {
    const huge = 'x'.repeat(1_000_000);
    for (const edit of [
      (o: Record<string, unknown>) => (o.step = huge),
      (o: Record<string, unknown>) => (o.config = huge),
      (o: Record<string, unknown>) => (o.format = [huge]),
    ]) {
      let message = '';
      try {
        checkpointFromJson(edited(edit), 'c.json');
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/^c\.json: /);
      expect(message.length).toBeLessThan(200);
    }
  });
});
