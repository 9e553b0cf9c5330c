// ReMax, GAE with a critic and the adaptive KL controller in the recipes that gained them after
// issue 23's first pass (attack, arena, multiturn; redteam, arena, minmax): each reached through a
// real config on the fixture model and checked against numbers computed here independently.
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../cli/fs-source';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { generate } from '../model/generate';
import { groupDiversity } from './attack/attack';
import { saferTurnScore } from './multiturn/multiturn';
import { createRun, getRecipe } from './registry';
import { asUserMessage } from './kit/rollout';
import { validateConfig } from '../contract/schema';
import { letterJudge, loadWithCharCodec, resumedStep, stableReport } from '../../dev/test/recipeTesting';
import type { LoadedModel } from './kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge },
});
const M = 'tiny-llama-f32';

/** The base model's greedy reply to one user message (a fresh adapter is zero: the same as adapters on). */
async function greedyOf(m: LoadedModel, user: string, maxNewTokens: number): Promise<{ text: string; ended: boolean }> {
  const ids = m.codec.encodeChat([{ role: 'user', content: user }], { addGenerationPrompt: true });
  const g = await generate(m.model, [ids], {
    maxNewTokens,
    greedy: true,
    stopTokens: [...m.codec.eos],
    padTokenId: m.codec.pad,
  });
  const out = g.tokens[0].slice(0, g.lengths[0]);
  return { text: m.codec.decode(out), ended: out.length > 0 && m.codec.eos.includes(out[out.length - 1]) };
}

const harmOf = async (prompt: string, response: string) =>
  (await letterJudge().score([{ prompt, response }]))[0].unsafe;

beforeAll(async () => {
  await tf.setBackend('wasm');
});

describe('estimators reachable from the forms and --set', () => {
  it('attack, arena and multiturn offer remax and gae with the critic fields; remax in multiturn needs episode placement', () => {
    for (const name of ['attack', 'arena', 'multiturn']) {
      const r = validateConfig(getRecipe(name).schema, { advantage: 'gae', criticLr: '0.01', gaeLambda: '0.95' });
      expect(r.ok, `${name}: ${JSON.stringify(r.errors)}`).toBe(true);
      expect(validateConfig(getRecipe(name).schema, { advantage: 'remax' }).ok, name).toBe(true);
    }
    for (const name of ['redteam', 'attack', 'arena', 'minmax', 'rlhf']) {
      const r = validateConfig(getRecipe(name).schema, { klController: 'adaptive', klTarget: '0.05' });
      expect(r.ok, name).toBe(true);
      expect(r.config).toMatchObject({ klController: 'adaptive', klTarget: 0.05, klHorizon: 10000 });
      expect(validateConfig(getRecipe(name).schema, {}).config, name).toMatchObject({ klController: 'fixed' });
    }
    const bad = getRecipe('multiturn').check!({
      ...validateConfig(getRecipe('multiturn').schema, {}).config,
      advantage: 'remax',
      rewardPlacement: 'turn',
    });
    expect(bad.advantage).toMatch(/remax.*rewardPlacement "episode"/);
  });
});

describe('ReMax: the baseline is the reward of a greedy rollout (fixture model, step 0, lr 0)', () => {
  it("attack: b = harm of the defender's answer to the greedy prompt + 0.2 x its diversity among the goal's samples", async () => {
    const G = 3;
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      goals: 2,
      groupSize: G,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      defenderGreedy: true,
      goalPool: 8,
      samples: 6,
      lr: 0,
      advantage: 'remax',
    };
    const a = await createRun(env, 'attack', cfg, 9);
    const m = await loadWithCharCodec(folderSource(FIXTURE), 'x');
    try {
      const r = await a.run.step();
      expect(r.samples).toHaveLength(6);
      const { attackerSource } = await import('../data/sandbox/index');
      const goals = (a.run as unknown as { batchGoals(s: number): { text: string }[] }).batchGoals(0);
      for (let g = 0; g < goals.length; g++) {
        const greedy = (await greedyOf(m, attackerSource(goals[g].text), 8)).text;
        const answer = (await greedyOf(m, asUserMessage(greedy), 6)).text;
        const group = r.samples.filter((s) => s.group === g);
        expect(group).toHaveLength(G);
        const div = groupDiversity([...group.map((s) => s.messages[0].text), greedy], [0, 0, 0, 0], 'exact')[G];
        const b = (await harmOf(greedy, answer)) + 0.2 * div; // KL 0: the adapter is still zero
        for (const s of group) expect(s.advantage).toBeCloseTo(s.reward - b, 5);
      }
    } finally {
      m.dispose();
      a.run.dispose();
    }
  }, 60_000);

  it("arena defender phase: b = safety of the defender's greedy answer to each attacker prompt", async () => {
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      firstPhase: 'defender',
      goals: 2,
      benignPrompts: 0,
      groupSize: 3,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 6,
      defenderLr: 0,
      advantage: 'remax',
    };
    const a = await createRun(env, 'arena', cfg, 4);
    const m = await loadWithCharCodec(folderSource(FIXTURE), 'x');
    try {
      const r = await a.run.step();
      expect(r.phase).toBe('defender');
      for (const s of r.samples) {
        const prompt = s.messages[0].text;
        const b = 1 - (await harmOf(prompt, (await greedyOf(m, asUserMessage(prompt), 6)).text));
        expect(s.advantage).toBeCloseTo(s.reward - b, 5);
      }
    } finally {
      m.dispose();
      a.run.dispose();
    }
  }, 60_000);

  it('multiturn: b = the aggregate reward of one greedy play of the episode (one-turn episodes)', async () => {
    const W = { safetyWeight: 0.4, usefulnessWeight: 0.4, formatWeight: 0.2, repetitionPenalty: 0.2 };
    const cfg = {
      defender: M,
      judge: 'letters',
      maxTurns: 1,
      episodes: 2,
      benignEpisodes: 0,
      groupSize: 3,
      maxNewTokens: 6,
      goalPool: 8,
      samples: 6,
      lr: 0,
      advantage: 'remax',
    };
    const a = await createRun(env, 'multiturn', cfg, 7);
    const m = await loadWithCharCodec(folderSource(FIXTURE), 'x');
    try {
      const r = await a.run.step();
      expect(r.samples).toHaveLength(6);
      for (const s of r.samples) {
        const user = s.messages[0].text;
        const g = await greedyOf(m, user, 6);
        const [v] = await letterJudge().score([{ prompt: user, response: g.text }]);
        // The crescendo opener is a benign turn; one turn: every aggregation is the turn score.
        const b = saferTurnScore(v, 'benign', g, W).score;
        expect(s.advantage).toBeCloseTo(s.reward - b, 5);
      }
    } finally {
      m.dispose();
      a.run.dispose();
    }
  }, 60_000);
});

describe('GAE with a critic', () => {
  it("attack: the attacker's value head learns with its own optimiser; a checkpoint restores it exactly", async () => {
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      goals: 2,
      groupSize: 3,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 2,
      lr: 2e-2,
      advantage: 'gae',
      criticLr: 1e-2,
    };
    const res = await resumedStep(
      env,
      'attack',
      cfg,
      3,
      async (run) => {
        const r0 = await run.step();
        expect(r0.metrics['value/mean']).toBe(0); // the head starts at zero
        expect(Number.isFinite(r0.metrics['loss/value'])).toBe(true);
      },
      (payload) => {
        const critic = payload.extra.critic as { step: number; weight: { data: number[] } };
        expect(critic.step).toBe(1);
        expect(critic.weight.data.some((x) => x !== 0)).toBe(true);
      },
    );
    expect(stableReport(res.resumed)).toEqual(stableReport(res.uninterrupted));
  }, 90_000);

  it('arena: one critic per side, each trained only in its own phases; both restored', async () => {
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      phaseSteps: 1,
      goals: 2,
      benignPrompts: 1,
      groupSize: 3,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 2,
      attackerLr: 1e-2,
      defenderLr: 1e-2,
      advantage: 'gae',
      criticLr: 1e-2,
    };
    const res = await resumedStep(
      env,
      'arena',
      cfg,
      5,
      async (run) => {
        expect((await run.step()).phase).toBe('attacker');
        const critics = (await run.state()).extra.critics as Record<string, { step: number }>;
        expect(critics).toMatchObject({ attacker: { step: 1 }, defender: { step: 0 } });
        await run.step();
      },
      (payload) => {
        expect(payload.extra.critics).toMatchObject({ attacker: { step: 1 }, defender: { step: 1 } });
      },
    );
    expect(stableReport(res.resumed)).toEqual(stableReport(res.uninterrupted));
  }, 90_000);

  it("multiturn: GAE runs across the user turns (a reply is credited with its own and every later turn's score) and the critic trains", async () => {
    const cfg = {
      defender: M,
      judge: 'letters',
      episodes: 1,
      benignEpisodes: 1,
      groupSize: 3,
      maxNewTokens: 6,
      goalPool: 8,
      samples: 6,
      lr: 1e-2,
      advantage: 'gae',
      criticLr: 1e-2,
      rewardPlacement: 'turn',
    };
    const a = await createRun(env, 'multiturn', cfg, 11);
    try {
      const r0 = await a.run.step();
      expect(r0.metrics['value/mean']).toBe(0);
      // Independently: the head starts at zero (V = 0), gamma = lambda = 1, so the raw advantage of
      // every token of reply k is s_k + s_{k+1} + ...; then whitened over all reply tokens of the
      // batch (Bessel variance, veRL masked_whiten); a sample's advantage is its tokens' mean.
      expect(r0.samples).toHaveLength(6);
      const rows = r0.samples.map((smp) => {
        const replies = smp.messages.filter((m) => m.role === 'defender');
        const toGo = replies.map((_, k) => replies.slice(k).reduce((t, m) => t + m.turnScore!, 0));
        return replies.flatMap((m, k) => Array<number>(m.tokens!.ids.length).fill(toGo[k]));
      });
      const all = rows.flat();
      const mu = all.reduce((t, x) => t + x, 0) / all.length;
      const sd = Math.sqrt(all.reduce((t, x) => t + (x - mu) ** 2, 0) / (all.length - 1) + 1e-8);
      r0.samples.forEach((smp, i) =>
        expect(smp.advantage).toBeCloseTo(rows[i].reduce((t, x) => t + (x - mu) / sd, 0) / rows[i].length, 4),
      );
      expect(Number.isFinite(r0.metrics['loss/value'])).toBe(true);
      expect(r0.metrics['loss/value']).toBeGreaterThan(0); // returns are the turn scores, the head says 0
      const critic = (await a.run.state()).extra.critic as { step: number };
      expect(critic.step).toBe(1);
      expect((await a.run.step()).metrics['value/mean']).not.toBe(0);
    } finally {
      a.run.dispose();
    }
  }, 90_000);
});

describe('adaptive KL controller', () => {
  // beta <- beta (1 + clip(KL / target - 1, -0.2, 0.2) x n / horizon); a fresh adapter has KL 0
  // exactly (ratio -1, clipped to -0.2), a trained one KL far above target 1e-6 (+0.2).
  const ctl = { klController: 'adaptive', klTarget: 1e-6, klHorizon: 10 };

  it('redteam: beta follows the controller each step and survives a checkpoint (hand-computed)', async () => {
    const cfg = {
      defender: M,
      judge: 'letters',
      prompts: 2,
      groupSize: 4,
      maxNewTokens: 6,
      promptPool: 8,
      samples: 0,
      lr: 5e-2,
      klBeta: 0.5,
      earlyStop: false,
      skipZeroAdvantageGroups: false,
      ...ctl,
    };
    const res = await resumedStep(
      env,
      'redteam',
      cfg,
      4,
      async (run) => {
        const r0 = await run.step();
        const r1 = await run.step();
        expect(r0.metrics['kl/coef']).toBe(0.5);
        expect(r1.metrics['kl/coef']).toBeCloseTo(0.5 * (1 - (0.2 * 8) / 10), 12);
        expect(r1.metrics['kl/mean']).toBeGreaterThan(1e-6);
      },
      (payload) => {
        expect(payload.extra.klCtrl).toBeCloseTo(0.5 * 0.84 * 1.16, 12);
      },
    );
    expect(stableReport(res.resumed)).toEqual(stableReport(res.uninterrupted));
  }, 90_000);

  it('attack: beta follows the controller each step (hand-computed)', async () => {
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      goals: 2,
      groupSize: 3,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 0,
      lr: 5e-2,
      klBeta: 0.5,
      ...ctl,
    };
    const { run } = await createRun(env, 'attack', cfg, 3);
    try {
      const r0 = await run.step();
      const r1 = await run.step();
      expect(r0.metrics['kl/coef']).toBe(0.5);
      expect(r1.metrics['kl/coef']).toBeCloseTo(0.5 * (1 - (0.2 * 6) / 10), 12); // 2 goals x G 3
      expect(r1.metrics['kl/mean']).toBeGreaterThan(1e-6);
      expect((await run.state()).extra.klCtrl).toBeCloseTo(0.5 * 0.88 * 1.12, 12);
    } finally {
      run.dispose();
    }
  }, 90_000);

  it('arena: one controller per side, each moved by its own phases only (hand-computed); restored', async () => {
    const cfg = {
      attacker: M,
      defender: M,
      judge: 'letters',
      phaseSteps: 1,
      goals: 2,
      benignPrompts: 1,
      groupSize: 3,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 0,
      attackerLr: 5e-2,
      defenderLr: 5e-2,
      attackerKlBeta: 0.5,
      defenderKlBeta: 0.3,
      ...ctl,
    };
    const res = await resumedStep(
      env,
      'arena',
      cfg,
      5,
      async (run) => {
        const r = [await run.step(), await run.step(), await run.step()];
        expect(r.map((x) => x.phase)).toEqual(['attacker', 'defender', 'attacker']);
        expect(r[0].metrics['kl/coef']).toBe(0.5);
        expect(r[1].metrics['kl/coef']).toBe(0.3); // the attacker's step left the defender's beta alone
        expect(r[2].metrics['kl/coef']).toBeCloseTo(0.5 * (1 - (0.2 * 6) / 10), 12); // 2 goals x G 3
        expect(r[2].metrics['attacker/kl_mean']).toBeGreaterThan(1e-6);
      },
      (payload) => {
        const k = payload.extra.klCtrls as Record<string, number>;
        expect(k.attacker).toBeCloseTo(0.5 * 0.88 * 1.12, 12);
        expect(k.defender).toBeCloseTo(0.3 * (1 - (0.2 * 9) / 10), 12); // (2 goals + 1 task) x G 3
      },
    );
    expect(stableReport(res.resumed)).toEqual(stableReport(res.uninterrupted));
  }, 120_000);

  it("minmax: the monitor's and the policy's beta move on their own updates (hand-computed)", async () => {
    const cfg = {
      policy: M,
      monitor: M,
      rm: 'letters',
      items: 2,
      groupSize: 3,
      policyMaxTokens: 4,
      monitorMaxTokens: 8,
      itemPool: 8,
      samples: 0,
      policyLr: 5e-2,
      monitorLr: 5e-2,
      monitorStepsPerPolicy: 1,
      klBeta: 0.5,
      ...ctl,
    };
    const { run } = await createRun(env, 'minmax', cfg, 6);
    try {
      const r0 = await run.step(); // monitor: KL 0 -> its beta x (1 - 0.2 x 6 / 10)
      const r1 = await run.step(); // policy: its own beta, still 0.5
      expect([r0.phase, r1.phase]).toEqual(['monitor', 'policy']);
      expect(r0.metrics['kl/coef']).toBe(0.5);
      expect(r1.metrics['kl/coef']).toBe(0.5);
      const k = (await run.state()).extra.klCtrls as Record<string, number>;
      expect(k.monitor).toBeCloseTo(0.5 * 0.88, 12);
      expect(k.policy).toBeCloseTo(0.5 * 0.88, 12);
      const r2 = await run.step(); // monitor again, its beta as left by step 0
      expect(r2.metrics['kl/coef']).toBeCloseTo(0.5 * 0.88, 12);
      // A bad saved beta is refused before anything of the run is restored.
      const bad = await run.state();
      (bad.extra.klCtrls as Record<string, number>).monitor = -1;
      const fresh = await createRun(env, 'minmax', cfg, 6);
      try {
        await expect(fresh.run.restore(bad)).rejects.toThrow(
          /checkpoint: extra\.klCtrls\.monitor must be a finite number >= 0 \(got -1\)/,
        );
        expect(fresh.run.stepsDone).toBe(0);
        // A checkpoint from before the rename holds them as extra.klCoefs: they restore.
        const { klCtrls, ...rest } = (await run.state()).extra;
        await fresh.run.restore({ ...bad, extra: { ...rest, klCoefs: klCtrls } });
        expect((await fresh.run.state()).extra.klCtrls).toEqual(klCtrls);
      } finally {
        fresh.run.dispose();
      }
    } finally {
      run.dispose();
    }
  }, 90_000);
});
