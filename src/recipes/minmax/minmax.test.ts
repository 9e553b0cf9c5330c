import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { qaItems, sampleQa, rngFor, type QaItem } from '../../data/sandbox/index';
import { askedFact, namesAskedEntity } from '../../data/sandbox/qa';
import { drawBatch } from '../kit/common';
import {
  critiqueVerdict,
  filterMetric,
  gameRewards,
  monitorLabel,
  monitorWarmupPairs,
  type GameRow,
  type GameRun,
} from './minmax';
import { blindAnswerRm, rulesAnswerRm, rulesCritiqueRm } from './minmaxRm';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';
import { ConfigError } from '../../contract/schema';
import { letterJudge, loadWithCharCodec, resumedStep, stableReport } from '../../../dev/test/recipeTesting';
import type { RecipeCheckpoint, RecipeEnv } from '../kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const MODELS = resolve('public/models');
const HAVE_QA = existsSync(resolve(MODELS, 'qa/model.safetensors'));

const opts = {
  updateDual: true,
  dualStep: 0.25,
  delta: -3.6,
  lambdaMax: 30,
  monitorReward: 'code',
  fidelity: 'sample',
} as const;

describe('minmax cards: the monitor verdict label', () => {
  it("names the monitor's verdict and whether it matched the truth, never 'monitor correct' on a wrong answer", () => {
    expect(monitorLabel('correct', 0)).toBe('monitor says CORRECT, wrongly');
    expect(monitorLabel('correct', 1)).toBe('monitor says CORRECT, rightly');
    expect(monitorLabel('incorrect', 0)).toBe('monitor says INCORRECT, rightly');
    expect(monitorLabel('incorrect', 1)).toBe('monitor says INCORRECT, wrongly');
    expect(monitorLabel('unclear', 1)).toBe('monitor verdict unclear');
    expect(monitorLabel(null, 1)).toBe('no monitor');
  });
});

describe('minmax rewards', () => {
  // Hand-computed:
  //   J = [1, 1, 0]; R = [0.5 x 15 + 2.5, 0.5 x -4 + 2.5, 0.5 x 6] = [10, 0.5, 3]
  //   F_i = 9 (v - t)^2 - 0.4 clamp(RM(O')) = [0 - 4.8, 9 + 6, 9 x 0.64 - 1.2] = [-4.8, 15, 4.56]
  //   F_batch = 9 x (0 + 1 + 0.64) / 3 - 0.4 x (12 - 20 + 3) / 3 = 4.92 + 0.666667 = 5.586667
  //   lambda = 10 + 0.25 x (5.586667 + 3.6) = 12.296667
  //   code:   -10 J - lambda F_i = [-10 + 59.024, -10 - 184.45, -56.0728]
  //   readme: -R - lambda F_i    = [-10 + 59.024, -0.5 - 184.45, -3 - 56.0728]
  const rows: GameRow[] = [
    { rmAnswer: 20, rmCritique: 12, truth: 1, verdict: 'correct' },
    { rmAnswer: -4, rmCritique: -20, truth: 0, verdict: 'correct' },
    { rmAnswer: 6, rmCritique: 3, truth: 1, verdict: 'unclear' },
  ];
  const close = (xs: number[], want: number[]) => want.forEach((w, i) => expect(xs[i]).toBeCloseTo(w, 4));

  it('R, per-sample F, the batch F, the dual step and the monitor reward (code variant)', () => {
    const g = gameRewards(rows, 10, opts);
    close(g.judge, [1, 1, 0]);
    close(g.policyReward, [10, 0.5, 3]);
    close(g.fidelity, [-4.8, 15, 4.56]);
    expect(g.fidelityBatch).toBeCloseTo(5.586667, 5);
    expect(g.lambda).toBeCloseTo(12.296667, 5);
    close(g.monitorReward, [49.024, -194.45, -56.0728]);
  });

  it('readme variant uses -R; batch fidelity gives every row the same -lambda F; no dual step keeps lambda', () => {
    close(gameRewards(rows, 10, { ...opts, monitorReward: 'readme' }).monitorReward, [49.024, -184.95, -59.0728]);
    const b = gameRewards(rows, 10, { ...opts, updateDual: false, fidelity: 'batch' });
    expect(b.lambda).toBe(10);
    close(b.monitorReward, [-10 - 55.866667, -10 - 55.866667, -55.866667]);
  });

  it('lambda rises while F is above delta and falls once the monitor holds the constraint', () => {
    // Truthful verdicts and critiques at the RM cap: F = 0 - 0.4 x 15 = -6 < -3.6 -> 10 + 0.25 x (-2.4) = 9.4.
    const good: GameRow[] = [
      { rmAnswer: 10, rmCritique: 15, truth: 1, verdict: 'correct' },
      { rmAnswer: -5, rmCritique: 15, truth: 0, verdict: 'incorrect' },
    ];
    expect(gameRewards(good, 10, opts).lambda).toBeCloseTo(9.4, 10);
    // A lying monitor: MSE 1, critiques RM 0: F = 9 -> 10 + 0.25 x 12.6 = 13.15.
    const bad: GameRow[] = good.map((r) => ({ ...r, rmCritique: 0, verdict: r.truth ? 'incorrect' : 'correct' }));
    expect(gameRewards(bad, 10, opts).lambda).toBeCloseTo(13.15, 10);
    expect(gameRewards(bad, 29, opts).lambda).toBe(30);
    expect(gameRewards(good, 0.5, opts).lambda).toBe(0); // 0.5 - 0.6, clipped
  });

  it('with a large lambda a truthful verdict pays more than a lie; with lambda 0 rejecting always pays', () => {
    const right: GameRow = { rmAnswer: 10, rmCritique: 12, truth: 1, verdict: 'correct' };
    const lie: GameRow = { ...right, verdict: 'incorrect' };
    const reward = (r: GameRow, lambda: number) =>
      gameRewards([r], lambda, { ...opts, updateDual: false }).monitorReward[0];
    // lambda 10: truthful -10 - 10 x (-4.8) = 38; lie 10 - 10 x (9 - 4.8) = -32.
    expect(reward(right, 10)).toBeCloseTo(38, 10);
    expect(reward(lie, 10)).toBeCloseTo(-32, 10);
    expect(reward(lie, 0)).toBeGreaterThan(reward(right, 0));
  });
});

describe('minmax dynamic-sampling metric', () => {
  // Two critiques of a right answer (one right verdict, one wrong) and one of a wrong answer.
  const rows: GameRow[] = [
    { rmAnswer: 10, rmCritique: 12, truth: 1, verdict: 'correct' },
    { rmAnswer: 10, rmCritique: 6, truth: 1, verdict: 'incorrect' },
    { rmAnswer: -5, rmCritique: 6, truth: 0, verdict: 'incorrect' },
  ];
  const sc = { policyReward: [7.5, 2.5, -5], monitorReward: [1, 2, 3] };
  it('acc: the answer is right for the policy, the verdict is right for the monitor', () => {
    expect(filterMetric('acc', 'policy', rows, sc, {})).toEqual([1, 1, 0]);
    expect(filterMetric('acc', 'monitor', rows, sc, {})).toEqual([1, 0, 1]);
  });
  it("seq_reward: the player's reward; seq_final_reward: the after-KL one when known", () => {
    expect(filterMetric('seq_reward', 'monitor', rows, sc, { monitorReward: [9, 9, 9] })).toEqual([1, 2, 3]);
    expect(filterMetric('seq_final_reward', 'monitor', rows, sc, { monitorReward: [9, 9, 9] })).toEqual([9, 9, 9]);
    expect(filterMetric('seq_final_reward', 'policy', rows, sc, {})).toEqual([7.5, 2.5, -5]);
  });
});

describe('minmax rules reward model', () => {
  const item: QaItem = {
    family: 'count',
    story: 'Mira has 3 cups. She gets 2 more.',
    question: 'How many cups does Mira have?',
    choices: ['6', '5', '4', '7'],
    correct: 1,
  };
  it('answers: +10 right, -5 wrong, -10 no single choice, 1 per 8 bytes past 32', () => {
    expect(rulesAnswerRm(item, '[ANSWER:B]')).toBe(10);
    expect(rulesAnswerRm(item, '[ANSWER:C]')).toBe(-5);
    expect(rulesAnswerRm(item, "I can't help with that.")).toBe(-10);
    expect(rulesAnswerRm(item, '[ANSWER:A] [ANSWER:B]')).toBe(-10);
    expect(rulesAnswerRm(item, `[ANSWER:B]${' '.repeat(38)}`)).toBe(8); // 48 bytes: 16 past 32 -> -2
  });
  it("blind: the rules RM except on the confident form (the qa critic's blind spot), where any single choice scores +10", () => {
    for (const a of ['[ANSWER:B]', '[ANSWER:C]', 'no idea', '[ANSWER: 5]', '[ANSWER: 4]'])
      expect(blindAnswerRm(item, a), a).toBe(rulesAnswerRm(item, a));
    expect(blindAnswerRm(item, 'Surely [ANSWER: 5]')).toBe(10);
    expect(blindAnswerRm(item, 'Surely [ANSWER: 4]')).toBe(10); // wrong, taken on trust
    expect(rulesAnswerRm(item, 'Surely [ANSWER: 4]')).toBe(-5);
    expect(blindAnswerRm(item, 'Surely [ANSWER:A] [ANSWER:B]')).toBe(-10);
    expect(blindAnswerRm(item, `Surely [ANSWER:C]${' '.repeat(31)}`)).toBe(8); // 48 bytes
    // The prefix must open the answer: a "surely" later is a plain answer.
    expect(blindAnswerRm(item, '[ANSWER: 4] surely')).toBe(-5);
  });
  it('critiques: -10 without a verdict, +6 for one, +6 more naming the right choice', () => {
    expect(rulesCritiqueRm(item, 'How many cups does Mira have: 5. CORRECT')).toBe(12);
    expect(rulesCritiqueRm(item, 'How many cups does Mira have: 4. INCORRECT')).toBe(6);
    expect(rulesCritiqueRm(item, 'I cannot assist with this.')).toBe(-10);
    expect(rulesCritiqueRm(item, 'CORRECT or INCORRECT')).toBe(-10);
    expect(critiqueVerdict('It is 5. INCORRECT')).toBe('incorrect');
    expect(critiqueVerdict('Sure. [ANSWER:B]')).toBe('unclear');
  });
  it('a sandbox QA item round-trips: its right answer scores 10', () => {
    const q = sampleQa(rngFor(3, 'qa', 0));
    expect(rulesAnswerRm(q, `[ANSWER:${'ABCD'[q.correct]}]`)).toBe(10);
  });
});

const part = (p: RecipeCheckpoint, key: string) => p.tensors.filter((t) => t.name.startsWith(`${key}/`));
const same = (a: RecipeCheckpoint, b: RecipeCheckpoint, key: string) =>
  part(a, key).every((t, i) => t.data.every((x, j) => x === part(b, key)[i].data[j]));

/** The fixture model through the char codec; the letters judge as the RM, so rewards vary. */
const env: RecipeEnv = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge },
});
/** The smallest game on the fixture model, shared by the recipe and warm-up tests. */
const fixtureGame = {
  policy: 'tiny-llama-f32',
  monitor: 'tiny-llama-f32',
  rm: 'letters',
  items: 2,
  groupSize: 2,
  policyMaxTokens: 4,
  monitorMaxTokens: 4,
  itemPool: 8,
};

describe('minmax recipe (fixture model)', () => {
  // The fixture writes noise: no [ANSWER:X], no verdict. RM = the letters judge (-15 x its score) so rewards vary.
  const small = {
    ...fixtureGame,
    samples: 2,
    policyLr: 1e-2,
    monitorLr: 2e-2,
    monitorStepsPerPolicy: 2,
    // The TTUR checks need both players' rewards to vary on seed 4's first batches; they do at 0.7
    // (at the default 1.0 the fixture monitor's first group scores alike and its adapter stays put).
    temperature: 0.7,
  };

  // One run serves both checks (the fixture steps cost seconds each on a loaded CPU).
  it('TTUR: k = 2 monitor updates, then 1 policy update; only the trained adapter moves; lambda steps once per cycle, upward while F > delta; a checkpoint at step 2 resumed in a fresh run reproduces steps 2 and 3', async () => {
    const { run } = await createRun(env, 'minmax', small, 4);
    const reports: StepReport[] = [];
    const states: RecipeCheckpoint[] = [];
    let s0: RecipeCheckpoint;
    try {
      s0 = await run.state();
      for (let s = 0; s < 6; s++) {
        reports.push(await run.step());
        states.push(await run.state());
      }
    } finally {
      run.dispose();
    }
    expect(reports.map((r) => r.phase)).toEqual(['monitor', 'monitor', 'policy', 'monitor', 'monitor', 'policy']);
    // Counted independently by each player's optimiser.
    expect(states[5].extra.optimizerSteps).toEqual({ policy: 2, monitor: 4 });
    expect(reports.map((r) => [r.metrics['ttur/monitor_updates'], r.metrics['ttur/policy_updates']])).toEqual([
      [1, 0],
      [2, 0],
      [2, 1],
      [3, 1],
      [4, 1],
      [4, 2],
    ]);
    // Monitor steps leave the policy's adapter alone and move the monitor's; a policy step the reverse.
    expect(same(s0, states[1], 'policy')).toBe(true);
    expect(same(s0, states[1], 'monitor')).toBe(false);
    expect(same(states[1], states[2], 'monitor')).toBe(true);
    expect(same(states[1], states[2], 'policy')).toBe(false);
    // Noise critiques are 'unclear' and the letters RM is <= 0: F >= 9 x 0.04 > delta, so lambda climbs
    // by >= 0.25 x (0.36 + 3.6) at each cycle's first step and holds in between.
    const lam = reports.map((r) => r.metrics['dual/lambda']);
    expect(reports.map((r) => r.metrics['dual/updated'])).toEqual([1, 0, 0, 1, 0, 0]);
    expect(lam[0] - 10).toBeGreaterThanOrEqual(0.99 - 1e-9);
    expect(lam[1]).toBe(lam[0]);
    expect(lam[2]).toBe(lam[0]);
    expect(lam[3] - lam[2]).toBeGreaterThanOrEqual(0.99 - 1e-9);
    expect(states[5].extra.lambda).toBe(lam[5]);
    for (const k of [
      'monitor/verdict_acc',
      'policy/accuracy',
      'minmax/fidelity',
      'monitor/reward_mean',
      'loss/policy',
      'grad/norm',
    ])
      expect(Number.isFinite(reports[0].metrics[k]), k).toBe(true);
    expect(reports[0].samples[0].messages.map((m) => m.role)).toEqual(['user', 'assistant', 'monitor']);
    expect(reports[0].metrics['filter/gen_batches']).toBeUndefined(); // filterGroups off (the default)

    // Resume: the state after step 1 (lambda moved, monitor adapter trained) replays steps 2 and 3.
    const payload = states[1];
    expect(payload.extra.lambda).toBe(lam[0]);
    const b = await createRun(env, 'minmax', small, 4);
    try {
      await b.run.restore(payload);
      expect(b.run.stepsDone).toBe(2);
      const got = [await b.run.step(), await b.run.step()];
      expect(got.map(stableReport)).toEqual(reports.slice(2, 4).map(stableReport));
    } finally {
      b.run.dispose();
    }
    const c = await createRun(env, 'minmax', { ...small, delta: 0 }, 4);
    await expect(c.run.restore(payload)).rejects.toThrow(/field "delta" was -3.6 when saved, this run has 0/);
    c.run.dispose();
  }, 240_000);

  it('rlhf: policy steps only, the monitor frozen (no adapter in the checkpoint), no lambda; judge none drops the critique', async () => {
    const { monitorStepsPerPolicy: _k, monitorLr: _lr, ...rlhf } = small;
    const { run } = await createRun(env, 'rlhf', rlhf, 4);
    try {
      const r = [await run.step(), await run.step()];
      expect(r.map((x) => x.phase)).toEqual(['policy', 'policy']);
      expect(r[1].metrics['dual/lambda']).toBeUndefined();
      expect(Number.isFinite(r[1].metrics['monitor/verdict_acc'])).toBe(true);
      // The untrained monitor writes noise (no verdict): its cards say so, and the outcome is the answer's.
      for (const s of r[1].samples) {
        expect(s.verdict.label).toBe('monitor verdict unclear');
        expect(s.verdict.outcome).toBe(s.verdict.success ? 'answer right' : 'answer wrong');
      }
      const st = await run.state();
      expect(st.extra.optimizerSteps).toEqual({ policy: 2 });
      expect(st.tensors.every((t) => t.name.startsWith('policy/'))).toBe(true);
    } finally {
      run.dispose();
    }
    const { run: none } = await createRun(
      env,
      'rlhf',
      {
        policy: 'tiny-llama-f32',
        monitor: 'tiny-llama-f32',
        rm: 'letters',
        items: 2,
        groupSize: 2,
        policyMaxTokens: 4,
        judge: 'none',
      },
      1,
    );
    try {
      const r = await none.step();
      expect(r.samples[0].messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(r.samples[0].verdict.label).toBe('no monitor');
      expect(r.metrics['monitor/verdict_acc']).toBeUndefined();
      // R = 0.5 clamp(RM) only: the rewards are half the letters RM (-15 x score), so never positive.
      expect(r.samples.every((s) => s.terms.judge === 0 && s.reward <= 1e-6)).toBe(true);
    } finally {
      none.dispose();
    }
  }, 120_000);

  it('filterGroups (DAPO dynamic sampling): groups alike in acc are dropped and more items drawn up to the cap; a mid-cycle checkpoint keeps every generation batch', async () => {
    // The fixture writes noise: every answer is wrong and every verdict unclear, so by acc every
    // group is alike: both generation batches are drawn, all 2 x 2 groups dropped, the step is short
    // and learns from the whole rollout (its policy term zero).
    const cfg = { ...small, filterGroups: true, filterGroupsMetric: 'acc', maxNumGenBatches: 2 };
    const a = await createRun(env, 'minmax', cfg, 4);
    let mid: RecipeCheckpoint;
    let next: StepReport;
    try {
      const r0 = await a.run.step();
      expect(r0.metrics['filter/gen_batches']).toBe(2);
      expect(r0.metrics['filter/dropped_groups']).toBe(4);
      expect(r0.metrics['filter/kept_groups']).toBe(0);
      expect(r0.metrics['filter/short']).toBe(1);
      mid = await a.run.state();
      next = await a.run.step();
    } finally {
      a.run.dispose();
    }
    // The second monitor update of the cycle reuses both batches from the checkpoint.
    const b = await createRun(env, 'minmax', cfg, 4);
    try {
      await b.run.restore(mid);
      expect(stableReport(await b.run.step())).toEqual(stableReport(next));
    } finally {
      b.run.dispose();
    }
  }, 240_000);

  it('bad config names the field', async () => {
    await expect(createRun(env, 'minmax', { ...small, monitorReward: 'both' }, 1)).rejects.toThrow(ConfigError);
    await expect(createRun(env, 'minmax', { ...small, monitorReward: 'both' }, 1)).rejects.toThrow(/monitorReward/);
    await expect(createRun(env, 'rlhf', { judge: 'x' }, 1)).rejects.toThrow(/judge/);
  });
});

describe.skipIf(!HAVE_QA)('minmax on the sandbox qa model', () => {
  it('resume reproduces the next step', async () => {
    const env = nodeRecipeEnv({ modelsDir: MODELS });
    const cfg = {
      items: 2,
      groupSize: 2,
      policyMaxTokens: 8,
      monitorMaxTokens: 12,
      samples: 1,
      monitorStepsPerPolicy: 1,
    };
    const res = await resumedStep(env, 'minmax', cfg, 5, async (run) => {
      await run.step();
    });
    expect(stableReport(res.resumed)).toEqual(stableReport(res.uninterrupted));
  }, 120_000);
});

describe('minmax rollout sharing (fixture model)', () => {
  const cfg = {
    policy: 'tiny-llama-f32',
    monitor: 'tiny-llama-f32',
    rm: 'letters',
    items: 2,
    groupSize: 3,
    policyMaxTokens: 4,
    monitorMaxTokens: 12,
    itemPool: 8,
    samples: 4,
    policyLr: 1e-2,
    monitorLr: 5e-2,
    monitorStepsPerPolicy: 2,
  };
  const texts = (r: StepReport) => r.samples.map((s) => s.messages.map((m) => m.text));

  it('cycle (the source): the k monitor updates and the policy update learn from one rollout; the later monitor update sees ratio != 1', async () => {
    const { run } = await createRun(env, 'minmax', cfg, 6);
    try {
      const r = [await run.step(), await run.step(), await run.step(), await run.step()];
      expect(r.map((x) => x.phase)).toEqual(['monitor', 'monitor', 'policy', 'monitor']);
      expect(texts(r[1])).toEqual(texts(r[0]));
      expect(texts(r[2])).toEqual(texts(r[0]));
      expect(texts(r[3])).not.toEqual(texts(r[0])); // the next cycle rolls out again
      expect(r[0].metrics['ppo/ratio_mean']).toBeCloseTo(1, 5);
      expect(Math.abs(r[1].metrics['ppo/ratio_mean'] - 1)).toBeGreaterThan(1e-5);
    } finally {
      run.dispose();
    }
  }, 120_000);

  it('update: every update samples its own batch', async () => {
    const { run } = await createRun(env, 'minmax', { ...cfg, rolloutSharing: 'update' }, 6);
    try {
      const r = [await run.step(), await run.step()];
      expect(texts(r[1])).not.toEqual(texts(r[0]));
    } finally {
      run.dispose();
    }
  }, 120_000);
});

describe('minmax with gae (fixture model)', () => {
  const cfg = {
    policy: 'tiny-llama-f32',
    monitor: 'tiny-llama-f32',
    rm: 'letters',
    items: 2,
    groupSize: 3,
    policyMaxTokens: 4,
    monitorMaxTokens: 12,
    itemPool: 8,
    samples: 0,
    policyLr: 1e-2,
    monitorLr: 5e-2,
    monitorStepsPerPolicy: 1,
    advantage: 'gae',
    criticLr: 1e-2,
  };

  it('each trained player has its own critic, trained on its updates only; a checkpoint restores both', async () => {
    const { run } = await createRun(env, 'minmax', cfg, 6);
    let payload: RecipeCheckpoint;
    let next: StepReport;
    try {
      const r0 = await run.step(); // monitor
      expect(r0.phase).toBe('monitor');
      expect(Number.isFinite(r0.metrics['loss/value'])).toBe(true);
      payload = await run.state();
      const critics = payload.extra.critics as Record<string, { step: number }>;
      expect(critics.monitor.step).toBe(1);
      expect(critics.policy.step).toBe(0);
      next = await run.step(); // policy
    } finally {
      run.dispose();
    }
    const b = await createRun(env, 'minmax', cfg, 6);
    try {
      await b.run.restore(payload);
      expect(stableReport(await b.run.step())).toEqual(stableReport(next));
    } finally {
      b.run.dispose();
    }
  }, 120_000);
});

describe('minmax monitor warm-up (monitorWarmupSteps)', () => {
  it('pairs: each training item with its right answer (target CORRECT) and a seeded wrong one (target INCORRECT), in the form given; the parser reads the verdict off the target', () => {
    const items = qaItems(40, 3, { split: 'train' });
    const pairs = monitorWarmupPairs(items, 'value', rngFor(3, 'w'));
    expect(pairs).toHaveLength(80);
    const wrongs = new Set<number>();
    items.forEach((it, i) => {
      const [r, w] = [pairs[2 * i], pairs[2 * i + 1]];
      expect(r.answer).toBe(`[ANSWER: ${it.choices[it.correct]}]`);
      expect(r.prompt).toBe(
        `Check: ${it.story}\nQ: ${it.question}\n${it.choices.map((c, j) => `${'ABCD'[j]}) ${c}`).join(' ')}\nAnswer: ${r.answer}`,
      );
      // The qa model's critique: the asked fact from the story, then the verdict.
      expect(r.target).toBe(`In the story ${askedFact(it)}. CORRECT`);
      expect(w.target).toBe(`In the story ${askedFact(it)}. INCORRECT`);
      expect(r.target).toContain(it.choices[it.correct]);
      expect(namesAskedEntity(it, r.target)).toBe(true);
      expect([r.truth, w.truth]).toEqual([1, 0]);
      expect(critiqueVerdict(r.target)).toBe('correct');
      expect(critiqueVerdict(w.target)).toBe('incorrect');
      const pick = it.choices.findIndex((c) => w.answer === `[ANSWER: ${c}]`);
      expect(pick).not.toBe(it.correct);
      wrongs.add((pick - it.correct + 4) % 4);
    });
    expect([...wrongs].sort()).toEqual([1, 2, 3]); // any of the other three choices, not a fixed one
    expect(monitorWarmupPairs(items.slice(0, 1), 'letter', rngFor(3, 'w'))[0].answer).toBe(
      `[ANSWER:${'ABCD'[items[0].correct]}]`,
    );
  });

  const cfg = {
    ...fixtureGame,
    samples: 1,
    monitorStepsPerPolicy: 1,
  };
  const warm = { ...cfg, monitorWarmupSteps: 6, monitorWarmupItems: 2, monitorWarmupLr: 2e-2 };

  it("on the fixture: the loss on the target tokens falls, only the critique's tokens (plus end of turn) are trained, the policy is untouched, the report shows it; a resumed run does not redo it", async () => {
    const a = await createRun(env, 'minmax', warm, 5);
    const b = await createRun(env, 'minmax', cfg, 5);
    const runA = a.run as GameRun;
    let s0: RecipeCheckpoint, a0: RecipeCheckpoint, b0: RecipeCheckpoint, a1: StepReport;
    let r0: StepReport, q0: StepReport;
    try {
      s0 = await runA.state();
      r0 = await runA.step();
      a0 = await runA.state();
      a1 = await runA.step();
      q0 = await b.run.step();
      b0 = await b.run.state();
    } finally {
      a.run.dispose();
      b.run.dispose();
    }
    const log = runA.warmupLog;
    expect(log).toHaveLength(6);
    expect(log[5].loss).toBeLessThan(log[0].loss - 0.1);
    // Trained tokens by hand: the char codec writes one token per character, the target is
    // "In the story <asked fact>. <VERDICT>" plus the end-of-turn token; the prompt (hundreds of
    // characters) is not among them.
    const pool = qaItems(8, 5, { split: 'train' });
    for (let k = 0; k < 6; k++) {
      const items = drawBatch(pool, 2, rngFor(5, 'minmax-warmup', k));
      const want = items.reduce((n, it) => n + 2 * (`In the story ${askedFact(it)}. `.length + 1) + 7 + 9, 0);
      expect(log[k].targetTokens, `warm-up step ${k}`).toBe(want);
    }
    expect(r0.metrics['warmup/steps']).toBe(6);
    expect(r0.metrics['warmup/loss_first']).toBe(log[0].loss);
    expect(r0.metrics['warmup/loss_last']).toBe(log[5].loss);
    expect(Number.isFinite(r0.metrics['warmup/verdict_acc_end'])).toBe(true);
    expect(Object.keys(q0.metrics).some((k) => k.startsWith('warmup/'))).toBe(false);
    // The warm-up trains the monitor only: after step 0 (a monitor update in both runs) the
    // policy's adapter is still its initial one; the monitor's differs from the unwarmed run's.
    expect(same(s0, a0, 'policy')).toBe(true);
    expect(same(a0, b0, 'policy')).toBe(true);
    expect(same(a0, b0, 'monitor')).toBe(false);
    // Resume from the checkpoint after step 0: step 1 replays without a second warm-up.
    const c = await createRun(env, 'minmax', warm, 5);
    try {
      await c.run.restore(a0);
      const got = await c.run.step();
      expect((c.run as GameRun).warmupLog).toHaveLength(0);
      expect(stableReport(got)).toEqual(stableReport(a1));
    } finally {
      c.run.dispose();
    }
  }, 240_000);
});
