// NaN-proof runs: a non-finite judge score, reward or dual variable stops the step before anything
// changes, with a NonFiniteError naming the term and its value (the loops then save and pause).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { recipeMain } from '../cli/recipe-run';
import type { Judge } from '../judges/types';
import { dualAscentStep } from '../rl/minmax';
import { checkpointFromJson } from './kit/checkpointFile';
import { NonFiniteError } from './kit/common';
import { createRun } from './registry';
import { loadWithCharCodec } from '../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

/** A judge that fails quietly: every verdict's P(unsafe) is NaN. */
const nanJudge = (): Judge => ({
  name: 'nan',
  async score(items) {
    return items.map(() => ({ unsafe: NaN, refused: false, benignCorrect: null, category: null, label: 'nan' }));
  },
});
const env = nodeRecipeEnv({ modelsDir: resolve(FIXTURE, '..'), load: loadWithCharCodec, judges: { nan: nanJudge } });
const tensorsOf = async (run: { state(): Promise<{ tensors: { data: ArrayLike<number> }[] }> }) =>
  (await run.state()).tensors.map((t) => Array.from(t.data));

describe('non-finite values', () => {
  it('dual ascent refuses a NaN fidelity or lambda instead of returning NaN for good (clamp passes NaN)', () => {
    expect(dualAscentStep(10, -3)).toBeCloseTo(10 + 0.25 * 0.6, 12);
    expect(() => dualAscentStep(10, NaN)).toThrow(/mean fidelity NaN/);
    expect(() => dualAscentStep(NaN, 1)).toThrow(/lambda NaN/);
  });

  it('multiturn: a NaN turn score is not dropped as missing; the step stops before any update, naming it', async () => {
    const { run } = await createRun(
      env,
      'multiturn',
      {
        defender: 'tiny-llama-f32',
        judge: 'nan',
        episodes: 1,
        benignEpisodes: 0,
        groupSize: 2,
        maxNewTokens: 4,
        goalPool: 4,
        samples: 0,
      },
      1,
    );
    try {
      const before = await tensorsOf(run);
      const e = await run.step().then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(NonFiniteError);
      expect((e as Error).message).toMatch(/multiturn: turn score of episode row 0, turn 0 is NaN \(safety NaN/);
      expect(run.stepsDone).toBe(0);
      expect(await tensorsOf(run)).toEqual(before);
    } finally {
      run.dispose();
    }
  });

  it('arena: a NaN harm score stops the attacker step, naming the term', async () => {
    const { run } = await createRun(
      env,
      'arena',
      {
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        judge: 'nan',
        goals: 1,
        groupSize: 2,
        benignPrompts: 0,
        attackerMaxTokens: 4,
        defenderMaxTokens: 4,
        goalPool: 4,
        samples: 0,
      },
      1,
    );
    try {
      await expect(run.step()).rejects.toThrow(/arena attacker: reward of row 0 is NaN \(harm NaN/);
      expect(run.stepsDone).toBe(0);
    } finally {
      run.dispose();
    }
  });

  it('the CLI writes the last good state to --save-checkpoint before it fails on a non-finite value', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'nan-')), 'last.json');
    const lines: string[] = [];
    const code = await recipeMain(
      [
        '--recipe',
        'defend',
        '--steps',
        '2',
        '--set',
        'attacker=tiny-llama-f32',
        '--set',
        'defender=tiny-llama-f32',
        '--set',
        'judge=nan',
        '--set',
        'goals=1',
        '--set',
        'benignPrompts=0',
        '--set',
        'groupSize=2',
        '--set',
        'maxNewTokens=4',
        '--set',
        'attackerMaxTokens=4',
        '--save-checkpoint',
        file,
      ],
      { env, stderr: (s: string) => void lines.push(s), stdout: () => undefined },
    );
    expect(code).toBe(1);
    expect(lines.join('')).toMatch(/defend: reward of row 0 is NaN/);
    const p = checkpointFromJson(readFileSync(file, 'utf8'), file);
    expect(p).toMatchObject({ recipe: 'defend', step: 0 });
  });
});

describe('input checks', () => {
  it('parseGoalPromptJsonl reads a file that starts with a UTF-8 BOM', async () => {
    const { parseGoalPromptJsonl } = await import('./attacker-sft/attackerSft');
    expect(parseGoalPromptJsonl('\uFEFF{"goal":"g","prompt":"p"}\r\n', 'bom.jsonl')).toEqual([
      { id: 'bom.jsonl:1', goal: 'g', prompt: 'p' },
    ]);
  });

  it('multiturn: episodes + benignEpisodes = 0 is a config error, before any model loads or step runs', async () => {
    let loaded = 0;
    const counting = nodeRecipeEnv({
      modelsDir: resolve(FIXTURE, '..'),
      load: (f, r) => (loaded++, loadWithCharCodec(f, r)),
      judges: { nan: nanJudge },
    });
    await expect(
      createRun(counting, 'multiturn', { defender: 'tiny-llama-f32', judge: 'nan', episodes: 0, benignEpisodes: 0 }, 1),
    ).rejects.toThrow(/"episodes" and "benignEpisodes" are both 0/);
    expect(loaded).toBe(0);
    // The same rule in the validation the worker's start and the CLI run, with the field named.
    const { getRecipe, validateRecipeConfig } = await import('./registry');
    const v = validateRecipeConfig(getRecipe('multiturn'), { episodes: '0', benignEpisodes: '0' });
    expect(v.ok).toBe(false);
    expect(v.errors.episodes).toMatch(/both 0/);
    expect(validateRecipeConfig(getRecipe('multiturn'), { episodes: '0', benignEpisodes: '1' }).ok).toBe(true);
  });
});
