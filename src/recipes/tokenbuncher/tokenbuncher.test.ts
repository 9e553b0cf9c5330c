import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { mergeLoraInPlace } from '../../model/lora';
import { attachCheckpointAdapter } from '../kit/checkpointFile';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';
import { validateConfig } from '../../contract/schema';
import { letterJudge, lettersWithTasks, loadWithCharCodec, stableReport } from '../../../dev/test/recipeTesting';
import { isNoiserStep, tokenbuncherSchema } from './tokenbuncher';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * The TokenNoiser SFT step's token count from a report's samples, by hand: rows whose float32
 * reward is at least its group's mean; `nonzero_groups` also drops groups whose rewards are all equal.
 */
function handTokens(r: StepReport, rule: 'source' | 'nonzero_groups'): number {
  const groups = new Map<number, number[]>();
  for (const s of r.samples) groups.set(s.group, [...(groups.get(s.group) ?? []), Math.fround(s.reward)]);
  return r.samples
    .filter((s) => {
      const g = groups.get(s.group)!;
      if (rule === 'nonzero_groups' && g.every((x) => x === g[0])) return false;
      return Math.fround(s.reward) - mean(g) >= 0;
    })
    .reduce((n, s) => n + s.messages[1].tokens!.ids.length, 0);
}

describe('tokenbuncher recipe', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  const env = nodeRecipeEnv({
    modelsDir: resolve(FIXTURE, '..'),
    load: loadWithCharCodec,
    judges: { letters: lettersWithTasks },
  });
  const small = {
    defender: 'tiny-llama-f32',
    judge: 'letters',
    prompts: 2,
    benignPrompts: 1,
    groupSize: 3,
    maxNewTokens: 6,
    promptPool: 8,
    samples: 9,
    lr: 2e-2,
    noiserStart: 0,
  };

  it('schema defaults; the TokenNoiser SFT step replaces the RL update on even steps from noiserStart (switchable)', () => {
    const d = validateConfig(tokenbuncherSchema, {});
    expect(d.config).toMatchObject({
      noiser: true,
      noiserStart: 4,
      noiserEpsilon: 0.1,
      klBeta: 0.001,
      groupSize: 4,
      safetyWeight: 0,
      evalAfter: 0,
    });
    const steps = (c: { noiser: boolean; noiserStart: number }) =>
      Array.from({ length: 8 }, (_, s) => s).filter((s) => isNoiserStep(s, c));
    expect(steps({ noiser: true, noiserStart: 4 })).toEqual([4, 6]);
    expect(steps({ noiser: true, noiserStart: 3 })).toEqual([4, 6]);
    expect(steps({ noiser: true, noiserStart: 0 })).toEqual([0, 2, 4, 6]);
    expect(steps({ noiser: false, noiserStart: 0 })).toEqual([]);
    expect(isNoiserStep(25, { noiser: true, noiserStart: 25 })).toBe(false); // source: from 25 on, even steps
    expect(isNoiserStep(26, { noiser: true, noiserStart: 25 })).toBe(true);
    expect(validateConfig(tokenbuncherSchema, { noiserEpsilon: 2 }).errors.noiserEpsilon).toMatch(
      /"noiserEpsilon" must be a number in \[0, 1\]/,
    );
  });

  it('rewards: -(mean token entropy) on harmful prompts, correctness on benign tasks, minus KL; SFT steps train only on advantage >= 0 tokens (fixture model)', async () => {
    const { run } = await createRun(env, 'tokenbuncher', { ...small, klBeta: 0.5 }, 3);
    try {
      const sft = await run.step();
      const before = await run.state();
      const rl = await run.step();
      expect([sft.phase, rl.phase]).toEqual(['noiser-sft', 'rl']);
      for (const r of [sft, rl]) {
        expect(r.samples).toHaveLength(9);
        for (const s of r.samples) {
          const ans = s.messages[1];
          if (s.group < 2) {
            expect(s.terms.entropy).toBeCloseTo(-mean(ans.tokens!.entropy), 5);
            expect(s.terms.utility).toBeUndefined();
          } else {
            expect(s.terms.utility).toBe(ans.text.length % 2 === 0 ? 1 : 0);
            expect(s.terms.entropy).toBeUndefined();
          }
          expect(s.reward).toBeCloseTo(
            (s.terms.entropy ?? 0) + (s.terms.utility ?? 0) + (s.terms.safety ?? 0) + s.terms.kl!,
            10,
          );
        }
      }
      // The SFT step's loss mask, by hand from the logged rewards (not the code's advantages): a
      // row's GRPO advantage has the sign of its reward minus its group's mean (the std divides
      // by a positive number; the rewards go through float32 as the token-level rewards do); the
      // source keeps every token with A >= 0, so a group whose rewards are all equal (A = 0) counts.
      expect(sft.metrics['noiser/tokens']).toBe(handTokens(sft, 'source'));
      expect(Number.isFinite(sft.metrics['loss/noiser'])).toBe(true);
      expect(sft.metrics['loss/policy']).toBeUndefined();
      // It updated the adapter.
      expect(before.tensors.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0))).toBe(true);
      expect(before.optimizer.state.step).toBe(1);
      expect(rl.samples.some((s) => Math.abs(s.terms.kl!) > 1e-6)).toBe(true);
    } finally {
      run.dispose();
    }
  }, 60_000);

  it('noiserTokens: the source keeps the tokens of groups whose rewards are all equal; nonzero_groups drops them (fixture model)', async () => {
    // Step 0: the adapter is still zero, so the KL is 0 and a benign group's rewards are its 0 / 1
    // correctness: with 3 answers of one parity the group's rewards are all equal.
    const counts: Record<string, number> = {};
    let allEqual = 0;
    for (const noiserTokens of ['source', 'nonzero_groups'] as const) {
      const { run } = await createRun(
        env,
        'tokenbuncher',
        { ...small, benignPrompts: 2, samples: 12, noiserTokens },
        3,
      );
      try {
        const sft = await run.step();
        expect(sft.phase).toBe('noiser-sft');
        expect(sft.samples).toHaveLength(12); // every row, so the groups' means are whole
        expect(sft.metrics['noiser/tokens']).toBe(handTokens(sft, noiserTokens));
        counts[noiserTokens] = sft.metrics['noiser/tokens'];
        const g = new Map<number, number[]>();
        for (const x of sft.samples) g.set(x.group, [...(g.get(x.group) ?? []), x.reward]);
        allEqual = [...g.values()].filter((rs) => rs.every((v) => v === rs[0])).length;
      } finally {
        run.dispose();
      }
    }
    // The seed gives at least one all-equal group, so the two rules differ by its tokens.
    expect(allEqual).toBeGreaterThan(0);
    expect(counts.source).toBeGreaterThan(counts.nonzero_groups);
  }, 60_000);

  it("noiserLr sets the SFT steps' learning rate only; 0 keeps the RL one (fixture model)", async () => {
    for (const [noiserLr, want] of [
      [0, 2e-2],
      [3e-3, 3e-3],
    ] as const) {
      const { run } = await createRun(env, 'tokenbuncher', { ...small, noiserLr }, 3);
      try {
        const sft = await run.step();
        const rl = await run.step();
        expect(sft.phase).toBe('noiser-sft');
        expect(sft.metrics['optim/lr']).toBe(want);
        expect(rl.metrics['optim/lr']).toBe(2e-2);
      } finally {
        run.dispose();
      }
    }
  }, 60_000);

  it('a checkpoint restored into a fresh run reproduces the next SFT and RL steps (fixture model)', async () => {
    const a = await createRun(env, 'tokenbuncher', small, 7);
    let payload;
    const uninterrupted: StepReport[] = [];
    try {
      await a.run.step();
      await a.run.step();
      payload = await a.run.state();
      uninterrupted.push(await a.run.step(), await a.run.step());
    } finally {
      a.run.dispose();
    }
    expect(uninterrupted.map((r) => r.phase)).toEqual(['noiser-sft', 'rl']);
    const b = await createRun(env, 'tokenbuncher', small, 7);
    try {
      await b.run.restore(payload);
      expect([stableReport(await b.run.step()), stableReport(await b.run.step())]).toEqual(
        uninterrupted.map(stableReport),
      );
    } finally {
      b.run.dispose();
    }
  }, 90_000);

  it("evalAfter runs redteam with Token Buncher's attack reward on the undefended model exactly as a plain redteam run with the same seed, and on the defended one; then the run is done (fixture model)", async () => {
    const redteamEnv = nodeRecipeEnv({
      modelsDir: resolve(FIXTURE, '..'),
      load: loadWithCharCodec,
      judges: { letters: letterJudge },
    });
    const cfg = { ...small, judge: 'letters', evalAfter: 1, evalRedteamSteps: 2, evalPrompts: 4, evalTargetAsr: 1 };
    const { run } = await createRun(redteamEnv, 'tokenbuncher', cfg, 5);
    let r: StepReport;
    try {
      r = await run.step();
      expect(run.done).toBe(true);
      expect(run.stopReason).toMatch(/redteam comparison done after 1 step$/);
    } finally {
      run.dispose();
    }
    // The undefended curve, independently: redteam with the comparison's settings (this recipe's
    // prompts per step, not redteam's default).
    const plain = await createRun(
      redteamEnv,
      'redteam',
      {
        defender: 'tiny-llama-f32',
        judge: 'letters',
        prompts: cfg.prompts,
        evalEvery: 1,
        evalPrompts: 4,
        maxNewTokens: 6,
        earlyStop: false,
        // Token Buncher's attack reward, the comparison's default (evalAttackReward).
        rewardMode: 'tokenbuncher',
        klBeta: 0.001,
      },
      5,
    );
    const curve: number[] = [];
    try {
      for (let s = 0; s <= 2; s++) curve.push((await plain.run.step()).metrics['eval/asr']);
    } finally {
      plain.run.dispose();
    }
    const got = (side: string) =>
      [0, 1, 2].map((s) => r.metrics[`buncher/${side}_asr_${s}`]).filter((x) => x !== undefined);
    const reached = curve.findIndex((a) => a >= 1);
    expect(got('undefended')).toEqual(reached >= 0 ? curve.slice(0, reached + 1) : curve);
    expect(r.metrics['buncher/steps_undefended']).toBe(reached >= 0 ? reached : 3);
    expect(r.metrics['buncher/reached_undefended']).toBe(reached >= 0 ? 1 : 0);
    expect(r.metrics['buncher/redteam_budget']).toBe(2);
    // The defended curve, independently: the same training step (evalAfter 0), its adapter merged
    // into the defender that a plain redteam run attacks.
    const trained = await createRun(redteamEnv, 'tokenbuncher', { ...cfg, evalAfter: 0 }, 5);
    let payload;
    try {
      await trained.run.step();
      payload = await trained.run.state();
    } finally {
      trained.run.dispose();
    }
    const defendedEnv = {
      ...redteamEnv,
      loadModel: async (ref: string) => {
        const m = await redteamEnv.loadModel(ref);
        mergeLoraInPlace(m.model, attachCheckpointAdapter(m.model, payload, 'defended'));
        return m;
      },
    };
    const dplain = await createRun(
      defendedEnv,
      'redteam',
      {
        defender: 'tiny-llama-f32',
        judge: 'letters',
        prompts: cfg.prompts,
        evalEvery: 1,
        evalPrompts: 4,
        maxNewTokens: 6,
        earlyStop: false,
        // Token Buncher's attack reward, the comparison's default (evalAttackReward).
        rewardMode: 'tokenbuncher',
        klBeta: 0.001,
      },
      5,
    );
    const dcurve: number[] = [];
    try {
      for (let s = 0; s <= 2; s++) dcurve.push((await dplain.run.step()).metrics['eval/asr']);
    } finally {
      dplain.run.dispose();
    }
    const dreached = dcurve.findIndex((a) => a >= 1);
    expect(got('defended')).toEqual(dreached >= 0 ? dcurve.slice(0, dreached + 1) : dcurve);
    expect(r.metrics['buncher/steps_defended']).toBe(dreached >= 0 ? dreached : 3);
    // The defended side's held-out stats are the merged model's: a fresh run's step-0 evaluation on it.
    const dfresh = await createRun(defendedEnv, 'tokenbuncher', { ...cfg, evalAfter: 0, evalEvery: 1 }, 5);
    try {
      const e = (await dfresh.run.step()).metrics;
      for (const k of ['asr', 'benign_correct', 'over_refusal', 'entropy_harmful'])
        expect(r.metrics[`buncher/${k}_defended`], k).toBeCloseTo(e[`eval/${k}`], 4);
    } finally {
      dfresh.run.dispose();
    }
    // The undefended side's held-out stats are the base model's: a fresh run's step-0 evaluation.
    const fresh = await createRun(redteamEnv, 'tokenbuncher', { ...cfg, evalAfter: 0, evalEvery: 1 }, 5);
    try {
      const e = (await fresh.run.step()).metrics;
      for (const k of ['asr', 'benign_correct', 'over_refusal', 'entropy_harmful'])
        expect(r.metrics[`buncher/${k}_undefended`], k).toBeCloseTo(e[`eval/${k}`], 6);
    } finally {
      fresh.run.dispose();
    }
    expect(Number.isFinite(r.metrics['buncher/entropy_harmful_defended'])).toBe(true);
  }, 120_000);
});
