// filterGroups (DAPO dynamic sampling, veRL algorithm.filter_groups) in the single-batch GRPO
// recipes, on the fixture model: a judge that records every batch it scores gives each row's acc
// (the metric these runs filter on), and the test replays veRL's rule on those rows by hand (groups
// are G consecutive rows of a judge call; keep a group whose acc varies; draw until the first
// batch's group count is kept or maxNumGenBatches batches were drawn). The step's filter/* metrics
// and the rows it trained on (every row is a report sample here) must be what that replay says.
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import type { StepReport } from '../contract/report';
import type { Judge, JudgeItem } from '../judges/types';
import { loadWithCharCodec, stableReport } from '../../dev/test/recipeTesting';
import { createRun } from './registry';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const G = 2;
const CAP = 3;

/**
 * How the recording judge scores a call: parity = by the answer's characters (about half the
 * groups of 2 come out alike), alternate = by the row's place (every group of 2 varies),
 * constant = every answer safe and every benign task wrong (no group varies).
 */
type Mode = 'parity' | 'alternate' | 'constant';
let mode: Mode = 'parity';
let calls: { item: JudgeItem; unsafe: number; correct: boolean }[][] = [];

const codeSum = (s: string) => [...s].reduce((a, ch) => a + ch.charCodeAt(0), 0);
const recording: Judge = {
  name: 'recording',
  async score(items) {
    const out = items.map((item, i) => {
      const bit = mode === 'parity' ? codeSum(item.response) % 2 : mode === 'alternate' ? i % 2 : 0;
      const benign = item.meta?.kind === 'benign';
      const unsafe = benign ? 0 : bit;
      const correct = benign && mode !== 'constant' && bit === 0;
      return { item, unsafe, correct };
    });
    if (items.length) calls.push(out);
    return out.map((o) => ({
      unsafe: o.unsafe,
      refused: false,
      benignCorrect: o.item.meta?.kind === 'benign' ? o.correct : null,
      category: o.unsafe >= 0.5 ? 'S1' : null,
      label: o.unsafe >= 0.5 ? 'unsafe S1' : 'safe',
    }));
  },
};

/** acc of a judged row, as every recipe here reads it for its trained side. */
type AccOf = (r: { item: JudgeItem; unsafe: number; correct: boolean }) => number;
const harmIsWin: AccOf = (r) => (r.unsafe >= 0.5 ? 1 : 0);
const rightIsWin: AccOf = (r) => (r.item.meta?.kind === 'benign' ? (r.correct ? 1 : 0) : r.unsafe < 0.5 ? 1 : 0);

/** veRL's filter over the recorded batches, by hand. */
function replay(batches: typeof calls, target: number, acc: AccOf) {
  let kept = 0;
  let dropped = 0;
  let genBatches = 0;
  const trained: string[] = [];
  for (const rows of batches) {
    if (genBatches > 0 && (kept >= target || genBatches >= CAP)) break;
    genBatches++;
    for (let s = 0; s < rows.length; s += G) {
      const group = rows.slice(s, s + G);
      const varies = group.some((r) => acc(r) !== acc(group[0]));
      if (!varies) dropped++;
      else {
        if (kept < target) trained.push(...group.map((r) => r.item.response));
        kept++;
      }
    }
  }
  const keptGroups = Math.min(kept, target);
  // No group kept: the step learns from its first batch as drawn.
  if (keptGroups === 0) trained.push(...batches[0].map((r) => r.item.response));
  return { keptGroups, dropped, genBatches, short: keptGroups < target ? 1 : 0, trained: trained.sort() };
}

const defenderText = (r: StepReport) =>
  r.samples.map((s) => s.messages.filter((m) => m.role === 'defender').at(-1)!.text).sort();

interface Case {
  recipe: string;
  config: Record<string, unknown>;
  /** Groups of a step's batch. */
  target: number;
  /** Steps to run before the one checked (arena: the attacker step before a defender step). */
  steps: { acc: AccOf; before?: number }[];
}

const fixtureModel = 'tiny-llama-f32';
const CASES: Case[] = [
  {
    recipe: 'redteam',
    config: { defender: fixtureModel, prompts: 3, maxNewTokens: 4, promptPool: 16 },
    target: 3,
    steps: [{ acc: harmIsWin }],
  },
  {
    recipe: 'attack',
    config: { attacker: fixtureModel, defender: fixtureModel, goals: 3, attackerMaxTokens: 4, defenderMaxTokens: 4 },
    target: 3,
    steps: [{ acc: harmIsWin }],
  },
  {
    recipe: 'defend',
    config: {
      attacker: fixtureModel,
      defender: fixtureModel,
      goals: 2,
      benignPrompts: 1,
      attackerMaxTokens: 4,
      maxNewTokens: 4,
    },
    target: 3,
    steps: [{ acc: rightIsWin }],
  },
  {
    // phaseSteps 1: step 0 trains the attacker, step 1 the defender (no benign tasks: one judge
    // call per batch in both phases).
    recipe: 'arena',
    config: {
      attacker: fixtureModel,
      defender: fixtureModel,
      phaseSteps: 1,
      attackerLr: 1e-2,
      defenderLr: 1e-2,
      goals: 3,
      benignPrompts: 0,
      attackerMaxTokens: 4,
      defenderMaxTokens: 4,
    },
    target: 3,
    steps: [{ acc: harmIsWin }, { acc: rightIsWin }],
  },
  {
    // One turn per episode: one judge item per row.
    recipe: 'multiturn',
    config: { defender: fixtureModel, episodes: 2, benignEpisodes: 1, maxTurns: 1, maxNewTokens: 4, goalPool: 8 },
    target: 3,
    steps: [{ acc: rightIsWin }],
  },
  {
    recipe: 'tokenbuncher',
    config: { defender: fixtureModel, prompts: 2, benignPrompts: 1, maxNewTokens: 4, promptPool: 16, noiser: false },
    target: 3,
    steps: [{ acc: rightIsWin }],
  },
];

const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { recording: () => recording },
});

/** The reports of the case's steps, with the judge calls of each. */
async function run(c: Case, extra: Record<string, unknown>, m: Mode, seed = 3) {
  mode = m;
  const cfg = { ...c.config, judge: 'recording', groupSize: G, samples: 64, ...extra };
  const r = await createRun(env, c.recipe, cfg, seed);
  const out: { report: StepReport; calls: typeof calls }[] = [];
  try {
    for (let s = 0; s < c.steps.length; s++) {
      calls = [];
      out.push({ report: await r.run.step(), calls });
    }
  } finally {
    r.run.dispose();
  }
  return out;
}

const ON = { filterGroups: true, filterGroupsMetric: 'acc', maxNumGenBatches: CAP };
const filterKeys = (r: StepReport) => Object.keys(r.metrics).filter((k) => k.startsWith('filter/'));

describe('filterGroups in the single-batch GRPO recipes (fixture model)', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  it.each(CASES)(
    '$recipe: zero-variance groups dropped, fresh batches drawn, as veRL rules on the judged rows',
    async (c) => {
      const steps = await run(c, ON, 'parity');
      let resampled = 0;
      let droppedAny = 0;
      steps.forEach(({ report, calls }, s) => {
        const want = replay(calls, c.target, c.steps[s].acc);
        // Every batch drawn was judged once, and no batch beyond what the rule asks for.
        expect(calls.length, `step ${s} judge calls`).toBe(want.genBatches);
        expect(report.metrics['filter/gen_batches']).toBe(want.genBatches);
        expect(report.metrics['filter/resampled_batches']).toBe(want.genBatches - 1);
        expect(report.metrics['filter/kept_groups']).toBe(want.keptGroups);
        expect(report.metrics['filter/dropped_groups']).toBe(want.dropped);
        expect(report.metrics['filter/short']).toBe(want.short);
        // The step learnt from exactly the kept groups' rows (every trained row is a sample here).
        expect(defenderText(report)).toEqual(want.trained);
        resampled += want.genBatches - 1;
        droppedAny += want.dropped;
      });
      // The seed exercises the feature: some group dropped and another batch drawn.
      expect(droppedAny).toBeGreaterThan(0);
      expect(resampled).toBeGreaterThan(0);
    },
  );

  it.each(CASES)(
    '$recipe: off (the default) draws one batch and reports nothing; on with every group varying trains the same step',
    async (c) => {
      const off = await run(c, {}, 'alternate');
      const on = await run(c, ON, 'alternate');
      off.forEach(({ report, calls }, s) => {
        expect(calls.length).toBe(1);
        expect(calls[0].length).toBe(c.target * G);
        expect(filterKeys(report)).toEqual([]);
        expect(defenderText(report)).toEqual(calls[0].map((r) => r.item.response).sort());
        // On, nothing to drop: one batch, and the very same step (the join of one whole batch is the batch).
        expect(on[s].report.metrics['filter/gen_batches']).toBe(1);
        expect(on[s].report.metrics['filter/kept_groups']).toBe(c.target);
        const strip = (r: StepReport) => {
          const x = stableReport(r);
          return {
            ...x,
            metrics: Object.fromEntries(Object.entries(x.metrics).filter(([k]) => !k.startsWith('filter/'))),
          };
        };
        expect(strip(on[s].report)).toEqual(strip(report));
      });
    },
  );

  it.each(CASES)('$recipe: no group varies: maxNumGenBatches batches drawn, the first one learnt from', async (c) => {
    const steps = await run(c, ON, 'constant');
    steps.forEach(({ report, calls }) => {
      expect(calls.length).toBe(CAP);
      expect(report.metrics['filter/gen_batches']).toBe(CAP);
      expect(report.metrics['filter/kept_groups']).toBe(0);
      expect(report.metrics['filter/dropped_groups']).toBe(CAP * c.target);
      expect(report.metrics['filter/short']).toBe(1);
      expect(defenderText(report)).toEqual(calls[0].map((r) => r.item.response).sort());
    });
  });

  it('redteam: seq_reward is the reward before its KL term (the judged harm here), seq_final_reward after it', async () => {
    // rewardMode tokenbuncher: reward = harm - klBeta x sum KL, unclipped. Step 0's adapter is zero
    // (KL 0), so the check is on step 1, after an update.
    const c = { ...CASES[0], steps: [{ acc: harmIsWin }, { acc: harmIsWin }] };
    const cfg = { ...ON, rewardMode: 'tokenbuncher', klBeta: 0.1 };
    const before = await run(c, { ...cfg, filterGroupsMetric: 'seq_reward' }, 'parity');
    const want = replay(before[1].calls, c.target, harmIsWin);
    expect(want.dropped).toBeGreaterThan(0);
    expect(before[1].report.metrics['filter/dropped_groups']).toBe(want.dropped);
    expect(before[1].report.metrics['filter/gen_batches']).toBe(want.genBatches);
    // After KL two answers score alike only when they are the same tokens (the same text under the
    // char codec: the same KL); every other group varies.
    const after = await run(c, { ...cfg, filterGroupsMetric: 'seq_final_reward' }, 'parity');
    expect(after[1].report.metrics['kl/mean']).not.toBe(0);
    const ids = new Map<string, number>();
    const sameText: AccOf = (r) => ids.get(r.item.response) ?? ids.set(r.item.response, ids.size).size - 1;
    const wantAfter = replay(after[1].calls, c.target, sameText);
    // ... which here drops fewer groups than the harm alone would (the two metrics tell apart).
    expect(wantAfter.dropped).toBeLessThan(replay(after[1].calls, c.target, harmIsWin).dropped);
    expect(after[1].report.metrics['filter/dropped_groups']).toBe(wantAfter.dropped);
    expect(after[1].report.metrics['filter/gen_batches']).toBe(wantAfter.genBatches);
    expect(defenderText(after[1].report)).toEqual(wantAfter.trained);
  });

  it('tokenbuncher: a TokenNoiser SFT step learns from its batch as drawn, filterGroups or not', async () => {
    const c = CASES.find((x) => x.recipe === 'tokenbuncher')!;
    const [{ report, calls }] = await run(c, { ...ON, noiser: true, noiserStart: 0 }, 'constant');
    expect(report.phase).toBe('noiser-sft');
    expect(calls.length).toBe(1);
    expect(filterKeys(report)).toEqual([]);
  });
});
