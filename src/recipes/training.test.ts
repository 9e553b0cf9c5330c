// The learning options every policy-gradient recipe shares (commonFields.trainingFields), reached
// through the recipes' configs: defaults per source, and what they change in a real step.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import type { Judge } from '../judges/types';
import { createRun, getRecipe } from './registry';
import { validateConfig } from '../contract/schema';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

/** Every answer equally harmless: every group's advantages are zero. */
const constantJudge = (): Judge => ({
  name: 'constant',
  async score(items) {
    return items.map(() => ({ unsafe: 0, refused: false, benignCorrect: null, category: null, label: 'safe' }));
  },
});

const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge, constant: constantJudge },
});
const small = { defender: 'tiny-llama-f32', prompts: 2, groupSize: 4, maxNewTokens: 6, promptPool: 8, samples: 0 };

describe('shared training options', () => {
  it("each recipe states its source's defaults: zero-advantage skipping and Adam beta2 (Tinker: on, 0.95; veRL-based: off, 0.999)", () => {
    const d = (name: string) => validateConfig(getRecipe(name).schema, {}).config as Record<string, unknown>;
    expect(d('redteam')).toMatchObject({ skipZeroAdvantageGroups: true, beta2: 0.95 });
    for (const name of ['defend', 'attack', 'tokenbuncher', 'multiturn', 'minmax', 'rlhf', 'arena']) {
      expect(d(name), name).toMatchObject({
        skipZeroAdvantageGroups: false,
        beta2: 0.999,
        ppoEpochs: 1,
        ppoMiniBatches: 1,
        clipRatioC: 3,
        entropyCoeff: 0,
        lossAggMode: 'auto',
        scaleRewards: 'group',
      });
    }
    // Reachable from the CLI's --set strings.
    const r = validateConfig(getRecipe('defend').schema, {
      ppoEpochs: '2',
      lossAggMode: 'seq-mean-token-sum-norm',
      trlLossType: 'dr_grpo',
      klLossCoef: '0.001',
      lrSchedule: 'cosine',
      maskTruncatedCompletions: 'true',
    });
    expect(r.ok, JSON.stringify(r.errors)).toBe(true);
    expect(r.config).toMatchObject({
      ppoEpochs: 2,
      lossAggMode: 'seq-mean-token-sum-norm',
      trlLossType: 'dr_grpo',
      klLossCoef: 0.001,
      lrSchedule: 'cosine',
      maskTruncatedCompletions: true,
    });
  });

  it('redteam: a step where every group is skipped takes no optimiser step (AdamW would still move the adapter)', async () => {
    const a = await createRun(
      env,
      'redteam',
      { ...small, judge: 'constant', klBeta: 0, repetitionPenalty: 0, weightDecay: 0.1, evalEvery: 0 },
      3,
    );
    try {
      const before = (await a.run.state()).tensors.map((t) => Array.from(t.data));
      const r = await a.run.step();
      expect(r.metrics['batch/skipped_rows']).toBe(8);
      expect(r.metrics['optim/updates']).toBe(0);
      const after = await a.run.state();
      expect(after.optimizer.state.step).toBe(0);
      expect(after.tensors.map((t) => Array.from(t.data))).toEqual(before);
    } finally {
      a.run.dispose();
    }
  });

  it('redteam with ppo and 2 epochs: two optimiser steps per rollout, and the clip binds on the second', async () => {
    const cfg = {
      ...small,
      judge: 'letters',
      policyLoss: 'ppo',
      skipZeroAdvantageGroups: false,
      normAdvByStd: true,
      ppoEpochs: 2,
      clipRatio: 0.02,
      lr: 5e-2,
      earlyStop: false,
    };
    const a = await createRun(env, 'redteam', cfg, 5);
    try {
      const r = await a.run.step();
      expect(r.metrics['optim/updates']).toBe(2);
      expect((await a.run.state()).optimizer.state.step).toBe(2);
      expect(r.metrics['ppo/clipfrac_last']).toBeGreaterThan(0);
    } finally {
      a.run.dispose();
    }
  });
});

describe('redteam reward modes', () => {
  it("tinker clips to [0, 1] with the repetition term; Token Buncher's attack and adaptive attack do neither (hand-computed)", async () => {
    const { redteamReward } = await import('./redteam/redteam');
    const a = { harm: 0.9, repetition: 0.5, kl: 0.2, entropy: 4, length: 10 };
    const c = { repetitionPenalty: 0.3, klBeta: 0.1 };
    expect(redteamReward('tinker', a, c)).toBeCloseTo(0.9 - 0.15 - 0.02, 12);
    expect(redteamReward('tinker', { ...a, harm: 0 }, c)).toBe(0); // clipped
    // harm - beta x sum k1 = 0.9 - 0.1 x 0.2 x 10
    expect(redteamReward('tokenbuncher', a, c)).toBeCloseTo(0.7, 12);
    expect(redteamReward('tokenbuncher', { ...a, harm: 0 }, c)).toBeCloseTo(-0.2, 12); // not clipped
    // + min(mean H, 3)
    expect(redteamReward('tokenbuncher_adaptive', a, c)).toBeCloseTo(3.7, 12);
  });

  it('a run in tokenbuncher_adaptive mode: each reward is harm + min(H, 3) + kl term, above 1 where the entropy is high (fixture model)', async () => {
    const a = await createRun(
      env,
      'redteam',
      { ...small, judge: 'letters', rewardMode: 'tokenbuncher_adaptive', samples: 8, temperature: 1.5 },
      4,
    );
    try {
      const r = await a.run.step();
      for (const s of r.samples) {
        const H = s.messages[1].tokens!.entropy;
        const meanH = H.reduce((x, y) => x + y, 0) / H.length;
        expect(s.terms.entropy).toBeCloseTo(Math.min(meanH, 3), 5);
        expect(s.reward).toBeCloseTo(s.terms.harm! + s.terms.entropy! + s.terms.kl!, 10);
      }
      expect(r.samples.some((s) => s.reward > 1)).toBe(true);
    } finally {
      a.run.dispose();
    }
  });
});

describe('LoRA options', () => {
  it("loraUseRslora reaches the adapter, and a checkpoint's adapter is rebuilt with its rsLoRA scale and its layers", async () => {
    const { attachCheckpointAdapter } = await import('./kit/checkpointFile');
    const a = await createRun(env, 'redteam', { ...small, judge: 'letters', loraUseRslora: true, loraRank: 4 }, 2);
    try {
      const lora = (a.run as unknown as { lora: { config: { useRslora?: boolean } } }).lora;
      expect(lora.config.useRslora).toBe(true);
      await a.run.step();
      const p = await a.run.state();
      const m = await loadWithCharCodec((await import('../cli/fs-source')).folderSource(FIXTURE), 'x');
      try {
        const set = attachCheckpointAdapter(m.model, p, 'ckpt');
        expect(set.config.useRslora).toBe(true);
        expect(set.config.layers).toBeUndefined();
        set.dispose();
        // A checkpoint that holds layer 0 only rebuilds an adapter on layer 0 only.
        const only0 = { ...p, tensors: p.tensors.filter((t) => t.name.includes('.layers.0.')) };
        const set0 = attachCheckpointAdapter(m.model, only0, 'ckpt');
        expect(set0.config.layers).toEqual([0]);
        set0.dispose();
      } finally {
        m.dispose();
      }
    } finally {
      a.run.dispose();
    }
  });
});

describe('StrongREJECT in the recipes that report ASR', () => {
  it("redteam on the built-in defender: judge/strongreject_rules is the mean proxy score of the step's answers", async () => {
    const { nodeRecipeEnv: mk } = await import('../cli/recipe-env');
    const { strongRejectRules } = await import('../judges/strongreject');
    const sandbox = mk({ modelsDir: resolve(HERE, '../../public/models') });
    const a = await createRun(
      sandbox,
      'redteam',
      { prompts: 4, groupSize: 4, samples: 16, lr: 0, tactics: 'mixed' },
      3,
    );
    try {
      const r = await a.run.step();
      const want = r.samples.map(
        (s) =>
          strongRejectRules({
            prompt: s.messages[0].text,
            response: s.messages[1].text,
            meta: { kind: 'harmful', category: s.category ?? null },
          }).score,
      );
      expect(r.samples).toHaveLength(16);
      expect(r.metrics['judge/strongreject_rules']).toBeCloseTo(want.reduce((x, y) => x + y, 0) / want.length, 10);
      expect(r.metrics['judge/strongreject_rules']).toBeGreaterThan(0); // the sandbox defender leaks on some tactics
    } finally {
      a.run.dispose();
    }
  }, 60_000);
});

describe('adaptive KL controller (KL in the reward)', () => {
  it('defend: beta moves by clip(KL / target - 1, +-0.2) x batch / horizon each step and survives a checkpoint (hand-computed)', async () => {
    const cfg = {
      attacker: 'tiny-llama-f32',
      defender: 'tiny-llama-f32',
      judge: 'letters',
      goals: 2,
      benignPrompts: 1,
      groupSize: 3,
      attackerMaxTokens: 8,
      maxNewTokens: 6,
      goalPool: 8,
      samples: 0,
      lr: 2e-2,
      klBeta: 0.5,
      klController: 'adaptive',
      klTarget: 1e-6,
      klHorizon: 10,
    };
    const a = await createRun(env, 'defend', cfg, 4);
    let payload;
    let next;
    try {
      const r0 = await a.run.step(); // KL 0 (fresh adapter): beta shrinks by 0.2 x 9 / 10
      const r1 = await a.run.step(); // KL far above the target: beta grows by 0.2 x 9 / 10
      expect(r0.metrics['kl/coef']).toBe(0.5);
      expect(r1.metrics['kl/coef']).toBeCloseTo(0.5 * (1 - 0.18), 12);
      expect(r1.metrics['kl/mean_k1']).toBeGreaterThan(1.2e-6);
      payload = await a.run.state();
      expect(payload.extra.klCtrl).toBeCloseTo(0.5 * 0.82 * 1.18, 12);
      next = await a.run.step();
    } finally {
      a.run.dispose();
    }
    const b = await createRun(env, 'defend', cfg, 4);
    try {
      await b.run.restore(payload);
      const again = await b.run.step();
      expect(again.metrics['kl/coef']).toBe(next.metrics['kl/coef']);
      expect(again.metrics['reward/mean']).toBe(next.metrics['reward/mean']);
    } finally {
      b.run.dispose();
    }
    // A checkpoint from before the rename holds the controller's value as extra.klCoef: it restores.
    const { klCtrl, ...rest } = payload.extra as Record<string, unknown>;
    const old = { ...payload, extra: { ...rest, klCoef: klCtrl } };
    const c = await createRun(env, 'defend', cfg, 4);
    try {
      await c.run.restore(old);
      expect((await c.run.state()).extra.klCtrl).toBe(klCtrl);
      expect((await c.run.step()).metrics['kl/coef']).toBe(next.metrics['kl/coef']);
    } finally {
      c.run.dispose();
    }
  }, 60_000);
});

describe('ReMax in redteam', () => {
  it("the baseline is the reward of each prompt's greedy answer: advantage = reward - b for every sample (fixture model, step 0)", async () => {
    const { generate } = await import('../model/generate');
    const { tinkerRepetitionRatio } = await import('../rl/repetition');
    const { tinkerRedTeamReward } = await import('../rl/rewards');
    const a = await createRun(env, 'redteam', { ...small, judge: 'letters', advantage: 'remax', samples: 8, lr: 0 }, 9);
    const m = await loadWithCharCodec((await import('../cli/fs-source')).folderSource(FIXTURE), 'x');
    try {
      const r = await a.run.step();
      expect(r.samples).toHaveLength(8);
      const judge = letterJudge();
      for (const s of r.samples) {
        // Independently: the base model's greedy answer (the fresh adapter is zero, so KL is 0).
        const ids = m.codec.encodeChat([{ role: 'user', content: s.messages[0].text }], { addGenerationPrompt: true });
        const g = await generate(m.model, [ids], {
          maxNewTokens: 6,
          greedy: true,
          stopTokens: [...m.codec.eos],
          padTokenId: m.codec.pad,
        });
        const text = m.codec.decode(g.tokens[0].slice(0, g.lengths[0]));
        const [v] = await judge.score([{ prompt: s.messages[0].text, response: text }]);
        const b = tinkerRedTeamReward(
          { harm: v.unsafe, repetition: tinkerRepetitionRatio(text), kl: 0 },
          { repetitionPenalty: 0.3, klBeta: 0.1 },
        );
        expect(s.advantage).toBeCloseTo(s.reward - b, 5);
      }
    } finally {
      m.dispose();
      a.run.dispose();
    }
  }, 60_000);
});

describe('GAE with a critic (defend)', () => {
  it('trains the value head with its own optimiser, reports the value loss, and a checkpoint restores the critic exactly', async () => {
    const cfg = {
      attacker: 'tiny-llama-f32',
      defender: 'tiny-llama-f32',
      judge: 'letters',
      goals: 2,
      benignPrompts: 1,
      groupSize: 3,
      attackerMaxTokens: 8,
      maxNewTokens: 6,
      goalPool: 8,
      samples: 0,
      lr: 2e-2,
      advantage: 'gae',
      criticLr: 1e-2,
    };
    const a = await createRun(env, 'defend', cfg, 4);
    let payload;
    let next;
    try {
      const r0 = await a.run.step();
      expect(Number.isFinite(r0.metrics['loss/value'])).toBe(true);
      expect(r0.metrics['value/mean']).toBe(0); // the head starts at zero
      // The critic's gradient is clipped on its own (criticGradClip separate, veRL): its norm is reported.
      expect(r0.metrics['grad/critic_norm']).toBeGreaterThan(0);
      payload = await a.run.state();
      const critic = payload.extra.critic as { step: number; weight: { data: number[]; m: number[] | null } };
      expect(critic.step).toBe(1);
      expect(critic.weight.data.some((x) => x !== 0)).toBe(true); // the critic learned
      expect(critic.weight.m).not.toBeNull();
      // Its moments are the critic optimiser's, not in the adapter's optimiser state.
      expect(payload.optimizer.tensors.every((t) => t.name.includes('lora_'))).toBe(true);
      next = await a.run.step();
    } finally {
      a.run.dispose();
    }
    const b = await createRun(env, 'defend', cfg, 4);
    try {
      await b.run.restore(payload);
      const again = await b.run.step();
      expect(again.metrics['value/mean']).toBe(next.metrics['value/mean']);
      expect(again.metrics['loss/value']).toBe(next.metrics['loss/value']);
    } finally {
      b.run.dispose();
    }
  }, 60_000);
});
