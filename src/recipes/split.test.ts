// The held-out evaluations of the recipes run on goals no training batch can draw: each run's
// actual training pool and actual evaluation set, read after an evaluating step.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { goalTemplateId, SANDBOX_HAZARDS, splitGoals } from '../data/sandbox/index';
import { uploadedAttackerSftData } from './attacker-sft/attackerSft';
import { createRun } from './registry';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';
import type { RecipeRun } from './kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge },
});
const EVAL_GOALS = new Set(SANDBOX_HAZARDS.flatMap((c) => splitGoals(c, 'eval')));

type Internals = Record<string, unknown>;
/** Training and evaluation goals; benign task texts where the recipe has benign tasks. */
type Sides = { train: string[]; eval: string[]; benignTrain?: string[]; benignEval?: string[] };
const goalsOf = (xs: unknown): string[] => (xs as { goal?: string; text?: string }[]).map((x) => x.goal ?? x.text!);

async function trainAndEval(recipe: string, config: Record<string, unknown>, read: (run: Internals) => Sides) {
  const { run } = await createRun(env, recipe, config, 5);
  try {
    const report = await (run as RecipeRun).step();
    return { ...read(run as unknown as Internals), report };
  } finally {
    run.dispose();
  }
}

describe('held-out evaluations are disjoint from training', () => {
  const m = { judge: 'letters', lr: 1e-2 };
  const cases: [string, Record<string, unknown>, (r: Internals) => Sides][] = [
    [
      'defend',
      {
        ...m,
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        goals: 1,
        benignPrompts: 0,
        groupSize: 2,
        attackerMaxTokens: 4,
        maxNewTokens: 4,
        goalPool: 200,
        evalEvery: 1,
        evalGoals: 40,
        evalBenign: 8,
        evalSamples: 1,
      },
      (r) => ({
        train: goalsOf(r.pool),
        eval: goalsOf((r.evalSet as Internals).goals),
        benignTrain: goalsOf(r.benignPool),
        benignEval: goalsOf((r.evalSet as Internals).benign),
      }),
    ],
    [
      'arena',
      {
        judge: 'letters',
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        goals: 1,
        benignPrompts: 0,
        groupSize: 2,
        attackerMaxTokens: 4,
        defenderMaxTokens: 4,
        goalPool: 200,
        evalEvery: 1,
        evalGoals: 40,
      },
      (r) => ({
        train: goalsOf(r.pool),
        eval: goalsOf((r.evalSet as Internals).goals),
        benignTrain: goalsOf(r.benignPool),
        benignEval: goalsOf((r.evalSet as Internals).benign),
      }),
    ],
    [
      'multiturn',
      {
        ...m,
        defender: 'tiny-llama-f32',
        episodes: 1,
        benignEpisodes: 0,
        groupSize: 2,
        maxNewTokens: 4,
        goalPool: 200,
        evalEvery: 1,
        evalEpisodes: 16,
        maxTurns: 2,
      },
      (r) => ({
        train: goalsOf((r.pools as Internals).harmful),
        eval: goalsOf((r.evalSet as { kind: string }[]).filter((e) => e.kind === 'harmful')),
      }),
    ],
    [
      'attacker-sft',
      { attacker: 'tiny-llama-f32', dataSize: 400, batchSize: 2, sampleGoals: 40, sampleMaxTokens: 4 },
      (r) => ({ train: goalsOf((r.data as Internals).train), eval: (r.data as Internals).heldOutGoals as string[] }),
    ],
    [
      'redteam',
      {
        ...m,
        defender: 'tiny-llama-f32',
        prompts: 1,
        groupSize: 2,
        maxNewTokens: 4,
        promptPool: 200,
        evalEvery: 1,
        evalPrompts: 40,
      },
      (r) => ({ train: goalsOf(r.pool), eval: goalsOf(r.evalSet) }),
    ],
  ];

  for (const [recipe, config, read] of cases) {
    it(`${recipe}: no evaluation goal is in the training pool, and the report states the split`, async () => {
      const { train, eval: ev, benignTrain, benignEval, report } = await trainAndEval(recipe, config, read);
      expect(ev.length).toBeGreaterThan(0);
      expect(train.length).toBeGreaterThan(0);
      const trained = new Set(train);
      expect(ev.filter((g) => trained.has(g))).toEqual([]);
      expect(ev.every((g) => EVAL_GOALS.has(g))).toBe(true);
      // A large pool covers many training goals; none of them is an evaluation goal.
      expect(trained.size).toBeGreaterThan(10);
      // Goals are held out by template: no evaluation goal shares its template with a training goal.
      const template = (g: string) => SANDBOX_HAZARDS.map((c) => goalTemplateId(c, g)).find((t) => t) ?? g;
      const trainedT = new Set(train.map(template));
      expect(ev.filter((g) => trainedT.has(template(g)))).toEqual([]);
      if (benignTrain && benignEval) {
        // Benign tasks are held out by task: a held-out task is never trained on, wrapped or not.
        expect(benignEval.length).toBeGreaterThan(0);
        expect(benignTrain.length).toBeGreaterThan(10);
        const tb = new Set(benignTrain);
        expect(benignEval.filter((t) => tb.has(t))).toEqual([]);
        // The report states the task split: 672 + 16 + 8 tasks, a quarter of each family held out.
        expect(report.metrics).toMatchObject({ 'split/benign_train': 522, 'split/benign_eval': 174 });
      }
      expect(report.metrics).toMatchObject({ 'split/train': 44, 'split/eval': 25, 'split/seed': 20261124 });
    });
  }
});

describe('an uploaded dataset is split by row', () => {
  const rows = Array.from({ length: 8 }, (_, i) => ({ goal: `goal ${i}`, prompt: `prompt ${i}` }));

  it('holds out a quarter of the rows (seeded, the same every time); held-out goals are never trained on', () => {
    const d = uploadedAttackerSftData(rows, { dataset: 'mine.jsonl', sampleGoals: 8 });
    expect(d.split).toEqual({ trainSize: 6, evalSize: 2, seed: 20261124 });
    expect(d.heldOutGoals).toHaveLength(2);
    expect(d.train.filter((r) => d.heldOutGoals.includes(r.goal))).toEqual([]);
    expect(uploadedAttackerSftData(rows, { dataset: 'mine.jsonl', sampleGoals: 8 })).toEqual(d);
    // A held-out row whose goal also has a training row is not evaluated on.
    const dup = [...rows, ...rows.map((r) => ({ ...r, prompt: `${r.prompt} again` }))];
    const e = uploadedAttackerSftData(dup, { dataset: 'dup.jsonl', sampleGoals: 8 });
    const trained = new Set(e.train.map((r) => r.goal));
    expect(e.heldOutGoals.every((g) => !trained.has(g))).toBe(true);
  });

  it('one row is a clear error naming the file', () => {
    expect(() => uploadedAttackerSftData(rows.slice(0, 1), { dataset: 'one.jsonl', sampleGoals: 8 })).toThrow(
      'one.jsonl: 1 row(s); attacker-sft needs at least 2 to hold one out for evaluation',
    );
  });
});
